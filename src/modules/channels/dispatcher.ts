// Owns sending outbound texts in one instance: claim due send jobs (a lease: one instance per job,
// and a crashed instance's jobs come back when its lease runs out, so every text is sent at least
// once), send through the channel's provider, and record the outcome with its event: sent, a retry
// with exponential backoff and full jitter, or failed with the provider's reason.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { ChannelsConfig } from '../../config-channels.js';
import type { Store } from '../../db/store.js';
import type { Tx } from '../../db/types.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import { PollLoop } from '../events/poll-loop.js';
import { retryDelayMs } from '../webhooks/dispatcher.js';
import { loadForSend, recordOutcome, type SendOutcome } from './delivery.js';
import { emailMessageId, Providers, providerFor, type SendResult } from './providers.js';
import {
  type ClaimedSend,
  claimSends,
  type LocalSender,
  nextSendDueAt,
  releaseSends,
  type SendLease,
} from './sends-repository.js';

/** Texts in flight at most per instance. */
const CONCURRENCY = 16;
/**
 * Claimed only once this many slots are free: a claim reads the due sends in order and leases them
 * in one write, so claiming a batch costs about what claiming one does, and claiming again as each
 * send finished made the claims most of the dispatcher's cost under a steady stream of texts.
 */
const CLAIM_BATCH = CONCURRENCY / 2;
/** Conversations remembered as having a text waiting (past this the memory restarts: one claim). */
const MAX_WAITING = 10_000;

/**
 * How long a claim lasts. An attempt is reading the message, the send (cut off at the send
 * timeout, src/modules/channels/providers.ts) and recording the outcome, so it ends well inside
 * this; and an instance that crashed mid-send holds its texts no longer than this before another
 * instance (or itself, restarted) sends them. 35 s with the default 15 s send timeout.
 */
export function leaseMs(sendTimeoutMs: number): number {
  return 2 * sendTimeoutMs + 5000;
}

export interface ChannelDispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  config: ChannelsConfig;
}

export class ChannelDispatcher implements LocalSender {
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  /** Texts being sent, by message id: the send and the text's conversation. */
  private readonly inFlight = new Map<string, { run: Promise<void>; conversationId: string }>();
  /** Texts claimed at birth that found every slot taken, oldest first, with when they were adopted. */
  private readonly adopted: { send: ClaimedSend; at: number }[] = [];
  private stopping = false;
  /**
   * Conversations with a text queued here unclaimed that may still wait behind a send in flight
   * here; forgotten once a claim finds none of theirs while none of theirs is in flight here.
   */
  private readonly waiting = new Set<string>();
  /** Whether the next step must claim (see step). */
  private claimWanted = true;
  private lastClaimAt = 0;
  /** When the earliest claimable text known at the last claim comes due. */
  private nextDueAt = 0;
  private readonly outcomes: Outcome[] = [];
  /** Whether a batch of outcomes is being recorded (the next one collects meanwhile). */
  private recording = false;
  private readonly shutdown = new AbortController();
  private readonly loop: PollLoop;
  private readonly providers: Providers;

  constructor(private readonly o: ChannelDispatcherOptions) {
    this.providers = new Providers(o.config);
    this.loop = new PollLoop(
      () => this.step(),
      o.config.pollMs,
      (err) => o.log.warn({ err }, 'channel dispatcher: claiming sends failed'),
    );
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    this.shutdown.abort();
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.run));
    await this.handBack(this.adopted.splice(0).map((a) => a.send));
  }

  /**
   * A lease for a text being written in this instance (claim at birth: src/modules/channels/
   * sends-repository.ts insertSend), or null when this dispatcher should not take it: stopping,
   * or a slot's worth of texts already waiting. A text claimed at birth costs no claim statement
   * (on SQLite, no write and no commit of its own) and is sent as soon as its transaction commits.
   */
  lease(): SendLease | null {
    if (this.stopping || this.inFlight.size + this.adopted.length >= CONCURRENCY) return null;
    return {
      instance: this.instance,
      until: new Date(Date.now() + leaseMs(this.o.config.sendTimeoutMs)).toISOString(),
    };
  }

  /** Sends a text claimed at birth, once its transaction has committed. */
  adopt(send: ClaimedSend): void {
    if (this.stopping) {
      void this.handBack([send]);
      return;
    }
    if (this.inFlight.has(send.messageId)) return;
    if (this.inFlight.size < CONCURRENCY) this.launch(send);
    else this.adopted.push({ send, at: Date.now() });
  }

  /** A text was queued unclaimed here: claim now rather than at the next poll. */
  queued(conversationId: string): void {
    // It may wait behind a send of its conversation in flight here: claimed when that one ends.
    if (this.waiting.size >= MAX_WAITING) this.waiting.clear();
    this.waiting.add(conversationId);
    this.claimWanted = true;
    this.wake();
  }

  /** Gives leases back so that any instance claims the texts again at once. */
  private async handBack(sends: ClaimedSend[]): Promise<void> {
    if (sends.length === 0) return;
    try {
      await releaseSends(
        this.o.db,
        this.instance,
        sends.map((s) => s.messageId),
      );
    } catch (err) {
      // Their leases run out instead, and the texts are claimed then.
      this.o.log.warn({ err }, 'channel dispatcher: handing back leases failed');
    }
  }

  private async step(): Promise<number | undefined> {
    // Texts adopted while every slot was taken go first. One that waited for as long as a send
    // may take would risk its lease running out mid-send (and a second instance sending it too):
    // it is handed back to be claimed afresh instead.
    const stale: ClaimedSend[] = [];
    while (this.adopted.length > 0 && this.inFlight.size < CONCURRENCY) {
      const { send, at } = this.adopted.shift()!;
      if (Date.now() - at > this.o.config.sendTimeoutMs) stale.push(send);
      else if (!this.inFlight.has(send.messageId)) this.launch(send);
    }
    if (stale.length > 0) {
      await this.handBack(stale);
      this.claimWanted = true;
    }
    const free = CONCURRENCY - this.inFlight.size;
    // The sends in flight wake the loop as they finish.
    if (free < CLAIM_BATCH) return undefined;
    // A claim runs only when something may be claimable: a text queued here unclaimed, a send
    // ending in a conversation where one was queued (the next in line), a retry or a text handed
    // back coming due, or the poll (other instances' texts, leases that ran out). Other wake-ups
    // (most sends ending) claim nothing.
    const now = Date.now();
    const pollAt = this.lastClaimAt + this.o.config.pollMs;
    if (!this.claimWanted && now < this.nextDueAt && now < pollAt) return Math.min(this.nextDueAt, pollAt) - now;
    this.claimWanted = false;
    this.lastClaimAt = now;
    const claimed = await claimSends(this.o.db, this.instance, free, leaseMs(this.o.config.sendTimeoutMs));
    // A claim of ours that is still in flight (its lease ran out under a very slow store, and we
    // claimed it again) is renewed, not sent a second time.
    for (const s of claimed) if (!this.inFlight.has(s.messageId)) this.launch(s);
    if (this.waiting.size > 0) {
      const busy = new Set([...this.inFlight.values()].map((f) => f.conversationId));
      for (const c of this.waiting) if (!busy.has(c)) this.waiting.delete(c);
    }
    if (claimed.length === free) {
      this.claimWanted = true;
      return undefined;
    }
    const next = await nextSendDueAt(this.o.db);
    this.nextDueAt = next ?? Number.POSITIVE_INFINITY;
    return next === null ? undefined : Math.max(0, next - Date.now());
  }

  private launch(s: ClaimedSend): void {
    const run = this.process(s)
      .catch((err) => this.o.log.error({ err, message: s.messageId }, 'channel send could not be recorded'))
      .finally(() => {
        this.inFlight.delete(s.messageId);
        // The next text of its conversation may have been waiting for this one.
        if (this.waiting.has(s.conversationId)) this.claimWanted = true;
        this.wake();
      });
    this.inFlight.set(s.messageId, { run, conversationId: s.conversationId });
  }

  private async send(ctx: NonNullable<Awaited<ReturnType<typeof loadForSend>>>): Promise<SendResult> {
    const { config } = this.o;
    const channel = ctx.outgoing.channel;
    if (channel === 'web') return { ok: true, externalId: ctx.message.id };
    if (config.dryRun) {
      this.o.log.info({ message: ctx.message.id, channel }, 'channels dry run: not sent');
      const id = channel === 'email' ? emailMessageId(config, ctx.message.id) : `dry_${ctx.message.id}`;
      return { ok: true, externalId: id };
    }
    if (providerFor(config, channel) === null) {
      return {
        ok: false,
        retryable: false,
        code: 'CHANNEL_NOT_CONFIGURED',
        message: `no provider is configured for the ${channel} channel`,
      };
    }
    return this.providers.send(ctx.outgoing, this.shutdown.signal);
  }

  private async process(s: ClaimedSend): Promise<void> {
    const { db } = this.o;
    const ctx = await loadForSend(db, s.messageId);
    // Only a queued text is sent: anything else was settled meanwhile (or the row is gone). Its job
    // is kept as finished, as a failed text's is, in case a retry wants it again.
    if (ctx === undefined || ctx.message.type !== 'text' || ctx.message.status !== 'queued') {
      return this.record({ messageId: s.messageId, next: 'failed', status: null });
    }
    const result = await this.send(ctx);
    // Cut off by the shutdown before it was transmitted: any instance sends it again at once.
    if (!result.ok && result.retryable && this.shutdown.signal.aborted) {
      return releaseSends(db, this.instance, [s.messageId]);
    }
    const attempts = s.attempts + 1;
    const retry = !result.ok && result.retryable && attempts < this.o.config.maxAttempts;
    const retryAtMs = Date.now() + retryDelayMs(attempts, this.o.config.retryBaseMs);
    // Claimed again when it comes due (see step).
    if (retry) this.nextDueAt = Math.min(this.nextDueAt, retryAtMs);
    const next = retry
      ? { retryAt: new Date(retryAtMs).toISOString() }
      : result.ok
        ? ('sent' as const)
        : ('failed' as const);
    if (!result.ok) {
      this.o.log.warn({ message: s.messageId, code: result.code, retry }, 'channel send failed');
    }
    const ref = { conversationId: ctx.message.conversationId, messageId: s.messageId, assignee: ctx.assignee };
    const status: Outcome['status'] = retry
      ? null
      : result.ok
        ? { ref, change: { status: 'sent', externalId: result.externalId, error: null } }
        : { ref, change: { status: 'failed', error: { code: result.code, message: result.message } } };
    return this.record({ messageId: s.messageId, next, status });
  }

  /**
   * Records an outcome with the others that finish meanwhile: while one batch's transaction runs,
   * the next collects, so under a stream of texts the record, its status change and its event
   * share one transaction (one commit, one webhooks read, one take of the events lock) with their
   * neighbours' instead of one each.
   */
  private record(o: Omit<Outcome, 'done'>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.outcomes.push({ ...o, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.recording) return;
      this.recording = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.outcomes.length > 0) await this.recordBatch(this.outcomes.splice(0));
    this.recording = false;
  }

  private async recordBatch(batch: Outcome[]): Promise<void> {
    const apply = (tx: Tx, outbox: Outbox, o: Outcome) => recordOutcome(tx, outbox, this.instance, o);
    try {
      await withEvents(this.o.db, async (tx, outbox) => {
        for (const o of batch) await apply(tx, outbox, o);
      });
      for (const o of batch) o.done();
    } catch (err) {
      if (batch.length === 1) return batch[0]!.done(err);
      // One outcome that cannot be recorded must not take the others with it: each on its own.
      for (const o of batch) {
        try {
          await withEvents(this.o.db, (tx, outbox) => apply(tx, outbox, o));
          o.done();
        } catch (e) {
          o.done(e);
        }
      }
    }
  }
}

/** A send's outcome waiting to be recorded. */
interface Outcome extends SendOutcome {
  done: (err?: unknown) => void;
}
