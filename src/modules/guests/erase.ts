// Owns erasing a guest (GDPR art. 17, docs/data-rights.md): in one transaction the guest's
// personal fields, the contents of their conversations' messages (and so the search index),
// their files, their stays' notes and references, the web visitor ids that led to them, texts still
// waiting to be sent, and every kept copy naming them (events, webhook payloads, stored idempotent
// answers) are redacted; file contents no other message uses are deleted once that has committed.
// Running it again changes nothing and answers the same guest.
import { rm } from 'node:fs/promises';
import { sql } from 'kysely';
import type { Store } from '../../db/store.js';
import { nowIso } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import type { AuthUser } from '../../lib/auth.js';
import { notFound } from '../../lib/errors.js';
import { AnswerSealer } from '../../lib/idempotency.js';
import type { BlobStore } from '../attachments/blob-store.js';
import { FETCH_KIND } from '../attachments/inbound.js';
import { contentInUse, type Origin } from '../attachments/repository.js';
import { type AuditTrail, ref } from '../audit/trail.js';
import { staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { cancelJob } from '../jobs/repository.js';
import { eventsNaming, messagePages } from './history.js';
import { ERASED_GUEST, ERASED_NAME, ERASED_TEXT, type ErasedScope, redact, redactEvent, scopeIds } from './redact.js';
import { findGuest, type GuestView, updateGuest } from './repository.js';

export interface EraseDeps {
  store: Store;
  blobs: BlobStore;
  /** JWT_SECRET and its predecessors: the keys stored idempotent answers are sealed with. */
  secrets: readonly string[];
}

const BATCH = 500;
/** The error a text that was still waiting to be sent gets: it is never sent. */
const NOT_SENT = { code: 'GUEST_ERASED', message: 'The guest was erased before this text was sent' };

const isErased = (g: GuestView) =>
  g.name === ERASED_NAME &&
  g.email === null &&
  g.phone === null &&
  g.notes === null &&
  g.externalRef === null &&
  g.tags.length === 0 &&
  Object.keys(g.attributes).length === 0;

export async function eraseGuest(deps: EraseDeps, user: AuthUser, id: string, audit: AuditTrail): Promise<GuestView> {
  const files: { sha256: string | null; staged: string | null }[] = [];
  const guest = await withEvents(deps.store, async (tx, outbox) => {
    // Two erases at once on PostgreSQL: the second waits here and finds the guest erased.
    if (tx.dialect === 'postgres')
      await tx.selectFrom('guests').select('id').where('id', '=', id).forUpdate().execute();
    const current = await findGuest(tx, id);
    if (current === undefined) throw notFound('Guest', id);
    const scope = await scopeOf(tx, id);
    files.push(...(await eraseRecords(tx, scope)));
    await redactEvents(tx, scope);
    await redactAnswers(tx, scope, new AnswerSealer(deps.secrets));
    if (isErased(current)) return current;
    const erased = await updateGuest(tx, current, ERASED_GUEST);
    await audit.record(tx, 'guest.erased', ref('guest', id));
    outbox.add({ type: 'guest.erased', actor: staffActor(user), data: erased });
    return erased;
  });
  await removeContents(deps, files);
  return guest;
}

/** The guest's conversations, stays and files. */
async function scopeOf(tx: Executor, guestId: string): Promise<ErasedScope> {
  const ids = async (q: Promise<{ id: string }[]>) => new Set((await q).map((r) => r.id));
  const conversationIds = await ids(
    tx.selectFrom('conversations').select('id').where('guest_id', '=', guestId).execute(),
  );
  const stayIds = await ids(tx.selectFrom('stays').select('id').where('guest_id', '=', guestId).execute());
  const attachmentIds =
    conversationIds.size === 0
      ? new Set<string>()
      : await ids(
          tx
            .selectFrom('attachments')
            .select('id')
            .where('conversation_id', 'in', [...conversationIds])
            .execute(),
        );
  return { guestId, conversationIds, stayIds, attachmentIds };
}

/** Rewrites the records themselves; returns the files whose contents may go once this commits. */
async function eraseRecords(tx: Tx, s: ErasedScope): Promise<{ sha256: string | null; staged: string | null }[]> {
  const now = nowIso();
  const conversations = [...s.conversationIds];
  await tx
    .updateTable('stays')
    .set({ notes: null, external_ref: null, updated_at: now })
    .where('guest_id', '=', s.guestId)
    .where((eb) => eb.or([eb('notes', 'is not', null), eb('external_ref', 'is not', null)]))
    .execute();
  // Another visit by the same widget visitor is a new guest.
  await tx.deleteFrom('web_visitors').where('guest_id', '=', s.guestId).execute();
  if (conversations.length === 0) return [];
  await tx
    .updateTable('conversations')
    .set({ subject: null, updated_at: now })
    .where('guest_id', '=', s.guestId)
    .where('subject', 'is not', null)
    .execute();
  // A text still waiting would now say "[erased]": it is never sent.
  const waiting = await tx
    .deleteFrom('channel_sends')
    .where('conversation_id', 'in', conversations)
    .where('status', '=', 'pending')
    .returning('message_id')
    .execute();
  for (let i = 0; i < waiting.length; i += BATCH) {
    await tx
      .updateTable('messages')
      .set({ delivery_status: 'failed', error_code: NOT_SENT.code, error_message: NOT_SENT.message, updated_at: now })
      .where(
        'id',
        'in',
        waiting.slice(i, i + BATCH).map((w) => w.message_id),
      )
      .where('delivery_status', '=', 'queued')
      .execute();
  }
  // The search index follows the content (a trigger on SQLite, a generated column on PostgreSQL).
  // A page of each conversation at a time: one statement per page, however long the history.
  for (const conversation of conversations) {
    for await (const page of messagePages(tx, conversation)) {
      const content = page.filter((m) => m.content !== ERASED_TEXT).map((m) => m.id);
      if (content.length > 0) {
        await tx
          .updateTable('messages')
          .set({ content: ERASED_TEXT, updated_at: now })
          .where('id', 'in', content)
          .execute();
      }
      const errors = page
        .filter((m) => m.error_message !== null && m.error_message !== ERASED_TEXT && m.error_code !== NOT_SENT.code)
        .map((m) => m.id);
      if (errors.length > 0) {
        await tx.updateTable('messages').set({ error_message: ERASED_TEXT }).where('id', 'in', errors).execute();
      }
    }
  }
  const files = await tx
    .deleteFrom('attachments')
    .where('conversation_id', 'in', conversations)
    .returning(['id', 'sha256', 'status', 'origin'])
    .execute();
  for (const f of files) if (f.status === 'pending') await cancelJob(tx, FETCH_KIND, f.id);
  return files.map((f) => {
    const origin = (typeof f.origin === 'string' ? JSON.parse(f.origin) : f.origin) as Origin | null;
    return { sha256: f.sha256, staged: origin?.provider === 'staged' ? origin.path : null };
  });
}

/** Events naming the guest or their records, and every webhook delivery of them. */
async function redactEvents(tx: Executor, s: ErasedScope): Promise<void> {
  for await (const rows of eventsNaming(tx, s)) {
    const updates: { id: number; data: string; changes: string | null }[] = [];
    for (const row of rows) {
      const before = {
        data: JSON.parse(row.data) as unknown,
        changes: row.changes === null ? null : JSON.parse(row.changes),
      };
      const after = redactEvent(before.data, before.changes, s);
      const data = JSON.stringify(after.data);
      const changes = after.changes === null ? null : JSON.stringify(after.changes);
      if (data !== row.data || changes !== row.changes) updates.push({ id: Number(row.id), data, changes });
    }
    if (updates.length === 0) continue;
    await updateEvents(tx, updates);
    const changed = updates.map((u) => u.id);
    const deliveries = await tx
      .selectFrom('webhook_deliveries')
      .select(['id', 'payload'])
      .where('event_id', 'in', changed)
      .execute();
    for (const d of deliveries) {
      const event = JSON.parse(d.payload) as Record<string, unknown>;
      const after = redactEvent(event.data, event.changes ?? null, s);
      const payload = JSON.stringify({
        ...event,
        data: after.data,
        ...(after.changes !== null && { changes: after.changes }),
      });
      if (payload !== d.payload)
        await tx.updateTable('webhook_deliveries').set({ payload }).where('id', '=', d.id).execute();
    }
  }
}

/** Rewrites a page of events in one statement (a round trip per event is most of a long erase on PostgreSQL). */
async function updateEvents(tx: Executor, rows: { id: number; data: string; changes: string | null }[]) {
  // VALUES names its columns column1, column2, … on both stores.
  const values = sql.join(rows.map((r) => sql`(cast(${r.id} as bigint), ${r.data}, ${r.changes})`));
  await sql`update events set data = v.column2, changes = v.column3 from (values ${values}) as v
    where events.id = v.column1`.execute(tx);
}

/**
 * Stored idempotent answers naming the guest or their records: replayed from now on redacted.
 * They are sealed, so each kept answer (24 hours of them) is opened to be looked at.
 */
async function redactAnswers(tx: Executor, s: ErasedScope, sealer: AnswerSealer): Promise<void> {
  const ids = scopeIds(s);
  const now = nowIso();
  for (let offset = 0; ; offset += BATCH) {
    const rows = await tx
      .selectFrom('idempotency_keys')
      .select(['caller', 'route', 'key', 'body'])
      .where('expires_at', '>', now)
      .orderBy('caller')
      .orderBy('route')
      .orderBy('key')
      .limit(BATCH)
      .offset(offset)
      .execute();
    for (const r of rows) {
      const text = sealer.open(r.body);
      if (text === null || !ids.some((id) => text.includes(id))) continue;
      const redacted = JSON.stringify(redact(JSON.parse(text), s));
      if (redacted === text) continue;
      await tx
        .updateTable('idempotency_keys')
        .set({ body: sealer.seal(redacted) })
        .where('caller', '=', r.caller)
        .where('route', '=', r.route)
        .where('key', '=', r.key)
        .execute();
    }
    if (rows.length < BATCH) return;
  }
}

/** After the commit: contents no remaining file names, and e-mail parts never fetched. */
async function removeContents(deps: EraseDeps, files: { sha256: string | null; staged: string | null }[]) {
  const digests = new Set(files.flatMap((f) => (f.sha256 === null ? [] : [f.sha256])));
  for (const sha256 of digests) if (!(await contentInUse(deps.store, sha256))) await deps.blobs.delete(sha256);
  for (const f of files) if (f.staged !== null) await rm(f.staged, { force: true });
}
