// Owns the files guests send: recorded `pending` with their message (in its transaction), then,
// after commit, fetched from the provider (Twilio with the account's Basic auth; WhatsApp resolved
// through the Graph API and downloaded with the bearer token) or read from the e-mail part staged
// before the transaction, sniffed, stored once per digest, and settled `stored` or `failed` with
// the reason, each change a `message.updated`. storeInboundAttachment is idempotent: a file no
// longer pending is left as it is.

import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { ChannelsConfig } from '../../config-channels.js';
import { nowIso, type Store } from '../../db/store.js';
import type { Tx } from '../../db/types.js';
import { validation } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { findMessage } from '../conversations/messages-repository.js';
import { findConversationRef } from '../conversations/repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { changesOf, SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import type { JobHandler, JobRunner } from '../jobs/runner.js';
import { receive, TooLarge } from './blob-store.js';
import { cleanFilename, declaredType, defaultFilename, judge } from './media.js';
import {
  type AttachmentRow,
  claimUpload,
  countAttempt,
  findAttachment,
  findAttachments,
  insertAttachment,
  type Origin,
  settleAttachment,
} from './repository.js';
import { type AttachmentDeps, withAttachments } from './service.js';

/** A file that came with a guest's message, as its channel describes it. */
export type InboundFile =
  | { kind: 'twilio'; url: string; contentType: string | null }
  | { kind: 'whatsapp'; mediaId: string; contentType: string | null; filename: string | null }
  | { kind: 'bytes'; bytes: Buffer; contentType: string | null; filename: string | null }
  /** Uploaded by the web widget's backend with POST /attachments: taken only by `by`, its uploader. */
  | { kind: 'upload'; id: string; by: string };

/** An inbound file made ready before the message's transaction (an e-mail part written to staging). */
export interface PreparedFile {
  file: InboundFile;
  origin: Origin | null;
  filename: string | null;
}

export type FetchOutcome = 'stored' | 'failed' | 'retry';

/** Attempts before a file whose provider keeps failing (5xx, 429, unreachable) is given up as failed. */
const MAX_ATTEMPTS = 5;
const FETCH_TIMEOUT_MS = 30_000;
/** The job kind that fetches one inbound file. */
export const FETCH_KIND = 'attachment.fetch';

class FetchFailure extends Error {
  constructor(
    readonly retryable: boolean,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class InboundFiles {
  constructor(
    private readonly store: Store,
    private readonly deps: AttachmentDeps,
    private readonly channels: ChannelsConfig,
    private readonly jobs: JobRunner,
    /** The runner's backoff base for a fetch the provider failed. */
    private readonly retryBaseMs = 1000,
  ) {}

  /** Before the transaction: e-mail parts written to staging files, so they are stored after commit. */
  async prepare(files: readonly InboundFile[]): Promise<PreparedFile[]> {
    const out: PreparedFile[] = [];
    for (const file of files) {
      if (file.kind === 'bytes') {
        await mkdir(this.deps.blobs.stagingDir, { recursive: true });
        const path = join(this.deps.blobs.stagingDir, `${Date.now()}-${randomBytes(8).toString('hex')}.mail`);
        await writeFile(path, file.bytes, { flag: 'wx' });
        out.push({
          file,
          origin: { provider: 'staged', path, contentType: file.contentType },
          filename: file.filename,
        });
      } else if (file.kind === 'twilio') {
        out.push({
          file,
          origin: { provider: 'twilio', url: file.url, contentType: file.contentType },
          filename: null,
        });
      } else if (file.kind === 'whatsapp') {
        out.push({
          file,
          origin: { provider: 'whatsapp', mediaId: file.mediaId, contentType: file.contentType },
          filename: file.filename,
        });
      } else out.push({ file, origin: null, filename: null });
    }
    return out;
  }

  /** The staging files of a message that was not stored (a duplicate, a refusal). */
  async discard(prepared: readonly PreparedFile[]): Promise<void> {
    for (const p of prepared) if (p.origin?.provider === 'staged') await rm(p.origin.path, { force: true });
  }

  /**
   * In the message's transaction: its files recorded, pending (uploads the widget made are taken
   * as they are, stored); the message returned with them. An upload id that names no unused
   * stored upload of the caller's (someone else's is not revealed) is a 400 naming it. `pending` gets the ids to fetch once this commits.
   */
  async record(
    tx: Tx,
    message: MessageView,
    prepared: readonly PreparedFile[],
  ): Promise<{ message: MessageView; pending: string[] }> {
    const uploads = prepared.flatMap((p) => (p.file.kind === 'upload' ? [p.file.id] : []));
    const found = new Map((await findAttachments(tx, uploads)).map((r) => [r.id, r]));
    const pending: string[] = [];
    const at = message.createdAt;
    for (const [i, p] of prepared.entries()) {
      const to = { conversationId: message.conversationId, messageId: message.id, position: i, at };
      if (p.file.kind === 'upload') {
        const row = found.get(p.file.id);
        if (row === undefined || row.status !== 'stored' || !(await claimUpload(tx, p.file.id, p.file.by, to))) {
          throw validation([{ field: `attachments/${i}`, message: 'names no unused uploaded file' }]);
        }
        continue;
      }
      const id = newId('att');
      await insertAttachment(tx, {
        id,
        ...to,
        source: 'inbound',
        status: 'pending',
        filename: cleanFilename(p.filename, id),
        contentType: declaredType(p.origin?.contentType),
        size: null,
        sha256: null,
        origin: p.origin,
        createdBy: null,
      });
      pending.push(id);
    }
    const [withFiles] = await withAttachments(tx, this.deps.signer, [message]);
    return { message: withFiles!, pending };
  }

  /**
   * In the message's transaction: one `attachment.fetch` job per pending file, so each is fetched
   * after commit on whichever instance claims it, retried with the runner's backoff, and survives a
   * restart (docs/jobs.md). The file's id is the job's key: one live fetch per file.
   */
  async schedule(tx: Tx, ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.jobs.enqueue(tx, { kind: FETCH_KIND, payload: { id }, key: id });
  }

  /** The runner's handler: a `retry` outcome throws, so the job is due again after the backoff. */
  handler(): JobHandler {
    return {
      kind: FETCH_KIND,
      // Below the runner's attempts: the fetch counts its own and settles `failed` at MAX_ATTEMPTS.
      maxAttempts: MAX_ATTEMPTS + 2,
      retryBaseMs: this.retryBaseMs,
      run: async (job) => {
        const { id } = job.payload as { id: string };
        const outcome = await this.storeInboundAttachment(id);
        if (outcome === 'retry') throw new Error(`attachment ${id}: the provider failed; fetched again later`);
      },
    };
  }

  /** Fetches, sniffs and stores one pending inbound file (see the file's comment). */
  async storeInboundAttachment(id: string): Promise<FetchOutcome> {
    const row = await findAttachment(this.store, id);
    if (row === undefined) return 'failed';
    if (row.status !== 'pending') return row.status;
    const attempts = await countAttempt(this.store, id);
    const origin = row.origin as Origin | null;
    let source: { body: Readable; declared: string | null };
    try {
      if (origin === null) throw new FetchFailure(false, 'PROVIDER_ERROR', 'the file has no origin to fetch it from');
      source = await this.open(origin);
    } catch (err) {
      const f = err instanceof FetchFailure ? err : new FetchFailure(true, 'PROVIDER_UNREACHABLE', String(err));
      if (f.retryable && attempts < MAX_ATTEMPTS) return 'retry';
      return this.settle(row, { status: 'failed', code: f.code, message: f.message });
    }
    let received: Awaited<ReturnType<typeof receive>>;
    try {
      received = await receive(this.deps.blobs, source.body, this.deps.maxBytes);
    } catch (err) {
      if (err instanceof TooLarge) {
        return this.settle(row, {
          status: 'failed',
          code: 'ATTACHMENT_TOO_LARGE',
          message: `the file is larger than ${this.deps.maxBytes} bytes (ATTACHMENT_MAX_BYTES)`,
        });
      }
      if (attempts < MAX_ATTEMPTS) return 'retry';
      return this.settle(row, { status: 'failed', code: 'PROVIDER_ERROR', message: (err as Error).message });
    }
    try {
      const verdict = await judge(received.head, received.text, declaredType(origin?.contentType) ?? source.declared);
      if (!verdict.ok) {
        return this.settle(row, { status: 'failed', code: 'ATTACHMENT_TYPE_REFUSED', message: verdict.message });
      }
      await this.deps.blobs.put(received.sha256, received.path, received.size);
      const filename = row.filename === row.id ? defaultFilename(verdict.contentType, row.id) : row.filename;
      const outcome = await this.settle(row, {
        status: 'stored',
        contentType: verdict.contentType,
        size: received.size,
        sha256: received.sha256,
        filename,
      });
      if (origin?.provider === 'staged') await rm(origin.path, { force: true });
      return outcome;
    } finally {
      await rm(received.path, { force: true });
    }
  }

  /** The bytes of a file at its provider, and the type the provider declared. */
  private async open(origin: Origin): Promise<{ body: Readable; declared: string | null }> {
    if (origin.provider === 'staged') {
      return { body: createReadStream(origin.path), declared: null };
    }
    if (origin.provider === 'twilio') {
      const t = this.channels.twilio;
      if (t === null) throw new FetchFailure(false, 'CHANNEL_NOT_CONFIGURED', 'Twilio is not configured');
      // The account's credentials go to Twilio's own API only, never to a host a form named.
      if (new URL(origin.url).origin !== new URL(t.apiUrl).origin) {
        throw new FetchFailure(false, 'PROVIDER_ERROR', 'the media URL is not on the Twilio API');
      }
      const auth = `Basic ${Buffer.from(`${t.accountSid}:${t.authToken}`).toString('base64')}`;
      return this.download(origin.url, auth);
    }
    const w = this.channels.whatsapp;
    if (w === null) throw new FetchFailure(false, 'CHANNEL_NOT_CONFIGURED', 'the WhatsApp Cloud API is not configured');
    const auth = `Bearer ${w.accessToken}`;
    const meta = await this.get(`${w.apiUrl}/${encodeURIComponent(origin.mediaId)}`, auth);
    let resolved: { url?: unknown; mime_type?: unknown };
    try {
      resolved = (await meta.json()) as { url?: unknown; mime_type?: unknown };
    } catch {
      throw new FetchFailure(true, 'PROVIDER_ERROR', 'the Graph API answered the media lookup with no JSON');
    }
    if (typeof resolved.url !== 'string') {
      throw new FetchFailure(false, 'PROVIDER_ERROR', 'the Graph API gave no download URL for the media');
    }
    const got = await this.download(resolved.url, auth);
    return {
      ...got,
      declared: typeof resolved.mime_type === 'string' ? declaredType(resolved.mime_type) : got.declared,
    };
  }

  private async download(url: string, authorization: string) {
    const res = await this.get(url, authorization);
    const length = Number(res.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(length) && length > this.deps.maxBytes) {
      await res.body?.cancel();
      throw new FetchFailure(false, 'ATTACHMENT_TOO_LARGE', `the file is larger than ${this.deps.maxBytes} bytes`);
    }
    if (res.body === null) throw new FetchFailure(true, 'PROVIDER_ERROR', 'the provider sent no body');
    return {
      body: Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>),
      declared: declaredType(res.headers.get('content-type')),
    };
  }

  private async get(url: string, authorization: string): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(url, { headers: { authorization }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    } catch (err) {
      throw new FetchFailure(true, 'PROVIDER_UNREACHABLE', (err as Error).message);
    }
    if (res.ok) return res;
    await res.body?.cancel();
    const retryable = res.status === 429 || res.status === 408 || res.status >= 500;
    throw new FetchFailure(retryable, `PROVIDER_${res.status}`, `the provider answered HTTP ${res.status}`);
  }

  /** Settles the file and writes the message's `message.updated`, in one transaction. */
  private async settle(
    row: AttachmentRow,
    outcome: Parameters<typeof settleAttachment>[2],
  ): Promise<'stored' | 'failed'> {
    await withEvents(this.store, async (tx, outbox) => {
      // Files of one message settle one at a time (PostgreSQL: under the message row's lock), so
      // each message.updated shows every file as the one before it left them.
      if (tx.dialect === 'postgres' && row.message_id !== null) {
        await tx.selectFrom('messages').select('id').where('id', '=', row.message_id).forUpdate().execute();
      }
      const message = row.message_id === null ? undefined : await findMessage(tx, row.conversation_id!, row.message_id);
      const before = message && (await withAttachments(tx, this.deps.signer, [message]))[0]!;
      if (!(await settleAttachment(tx, row.id, outcome, nowIso())) || before === undefined) return;
      const after = (await withAttachments(tx, this.deps.signer, [message!]))[0]!;
      const ref = await findConversationRef(tx, after.conversationId);
      outbox.add({
        type: 'message.updated',
        actor: SYSTEM,
        data: after,
        changes: changesOf(before, after),
        conversationId: after.conversationId,
        assignee: ref?.assignee ?? null,
      });
    });
    return outcome.status;
  }
}
