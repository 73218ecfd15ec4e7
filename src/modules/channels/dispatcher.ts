// Owns sending outbound texts in one instance, on the shared lease worker (src/modules/jobs/
// lease-worker.ts: claim with a lease renewed while a send lasts, in-flight map, poll loop, release
// on stop; a crashed instance's jobs come back when its lease runs out): each channel within its own
// slots, claimed for in batches and only when something may be claimable, texts claimed at birth
// adopted; send through the channel's provider, and record the outcome with its event: sent (any
// acceptance), a retry with the shared backoff, or failed with the provider's reason. A text is sent
// at most once per send decided: an outcome the store refuses is recorded again (never sent again),
// and each claim counts an attempt, so a text whose sends keep dying with their instance ends
// `failed` after the last attempt.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { ChannelsConfig } from '../../config-channels.js';
import type { Store } from '../../db/store.js';
import { Signal } from '../../lib/signal.js';
import { retryDelayMs } from '../jobs/backoff.js';
import { LeaseWorker, type RunLease, type RunOutcome } from '../jobs/lease-worker.js';
import { type FillFiles, loadForSend, type SendOutcome } from './delivery.js';
import { OutcomeRecorder } from './outcomes.js';
import { type OutboundFiles, Providers } from './providers.js';
import {
  type ClaimedSend,
  claimSends,
  type LocalSender,
  nextSendDueAt,
  releaseSends,
  renewLeases,
  SEND_CHANNELS,
  type SendLease,
} from './sends-repository.js';
import { purgeChannelRecords } from './statuses.js';

/** Conversations remembered as having a text waiting (past this the memory restarts: one claim). */
const MAX_WAITING = 10_000;
/** The longest pause between two tries to record an outcome the store refused. */
const MAX_RECORD_BACKOFF_MS = 1000;

export interface ChannelDispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  config: ChannelsConfig;
  /** Reads the files of a message being sent (src/modules/attachments/outbound.ts); none: texts only. */
  files?: OutboundFiles;
  /** Gives the messages of status events their files (attachments/service.ts fillFiles); none: as read. */
  fill?: FillFiles;
}

/** A send job leased to this instance, as the lease worker holds it (its bucket: the channel). */
type Held = ClaimedSend & { id: string; bucket: string };
const held = (s: ClaimedSend): Held => ({ ...s, id: s.messageId, bucket: s.channel });

/** The channels a claim names, or null for all of them (and jobs written before jobs named one). */
const channelsOf = (buckets: readonly string[]) => (buckets.length >= SEND_CHANNELS.length ? null : buckets);

export class ChannelDispatcher implements LocalSender {
  /** Each recorded outcome of a send, by its channel (the metrics count them). */
  readonly settled = new Signal<{ channel: string; outcome: 'sent' | 'failed' | 'retried' }>();
  private readonly worker: LeaseWorker<Held>;
  /**
   * Conversations with a text queued here unclaimed that may still wait behind a send in flight
   * here; forgotten once a claim finds none of theirs while none of theirs is in flight here.
   */
  private readonly waiting = new Set<string>();
  private readonly outcomes: OutcomeRecorder;
  private readonly providers: Providers;

  constructor(private readonly o: ChannelDispatcherOptions) {
    const { db, config } = o;
    this.providers = new Providers(config, o.log);
    this.worker = new LeaseWorker<Held>({
      name: 'channel dispatcher',
      log: o.log,
      pollMs: config.pollMs,
      leaseMs: config.leaseMs,
      source: {
        claim: (instance, bucket, limit, until) => this.claim(instance, [bucket], limit, until),
        claimAcross: (instance, buckets, limit, until) => this.claim(instance, buckets, limit, until),
        nextDueAt: (buckets) => nextSendDueAt(db, channelsOf(buckets)),
        renew: (instance, ids, until) => renewLeases(db, instance, ids, new Date(until).toISOString()),
        // Texts claimed at birth never sent here: their attempt is not counted.
        release: (instance, sends) =>
          releaseSends(
            db,
            instance,
            sends.map((s) => s.messageId),
            true,
          ),
      },
      run: (send, signal, lease) => this.process(send, signal, lease),
      // A send ending lets the next text of its conversation go, if one was queued here. Other ends
      // (most sends) claim nothing.
      claimAfterRun: (send) => this.waiting.has(send.conversationId),
      // Ended while the lease still covers a send timeout and two renewal periods: an SMTP session
      // that transmitted its message waits at most a send timeout more for its answer.
      abortWithinMs: config.sendTimeoutMs + 2 * Math.max(1, Math.floor(config.leaseMs / 4)),
      adoptMaxWaitMs: config.sendTimeoutMs,
    });
    this.outcomes = new OutcomeRecorder(db, this.worker.instance, o.fill ?? null);
    // Claimed in batches of half the slots: claiming again as each send finished made the claims
    // most of the dispatcher's cost under a steady stream of texts.
    for (const c of SEND_CHANNELS) this.worker.setSlots(c, config.concurrency, Math.floor(config.concurrency / 2));
  }

  get instance(): string {
    return this.worker.instance;
  }

  start(): void {
    this.worker.start();
  }

  wake(): void {
    this.worker.wake();
  }

  /**
   * Stops claiming, interrupts the sends in flight and waits for them; their leases are no longer
   * renewed, and outlast a send timeout, the longest an SMTP answer is still waited for now.
   */
  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** Deletes finished send jobs and unclaimed provider reports past their retention. */
  purge(): Promise<void> {
    return purgeChannelRecords(this.o.db);
  }

  /**
   * A lease for a text of `channel` being written in this instance (claim at birth: src/modules/
   * channels/sends-repository.ts insertSend), or null when this dispatcher should not take it:
   * stopping, or the channel's slots already taken. A text claimed at birth costs no claim
   * statement (on SQLite, no write and no commit of its own) and is sent as soon as its
   * transaction commits.
   */
  lease(channel: string): SendLease | null {
    if (!this.worker.canTake(channel)) return null;
    const untilMs = Date.now() + this.o.config.leaseMs;
    return { instance: this.worker.instance, until: new Date(untilMs).toISOString(), untilMs };
  }

  /** Sends a text claimed at birth, once its transaction has committed. */
  adopt(send: ClaimedSend): void {
    this.worker.adopt(held(send), send.leaseUntil);
  }

  /** A text of the web channel was sent at commit (no provider): counted with the others. */
  sentAtCommit(channel: string): void {
    this.settled.emit({ channel, outcome: 'sent' });
  }

  /** A text was queued unclaimed here: claim now rather than at the next poll. */
  queued(conversationId: string): void {
    // It may wait behind a send of its conversation in flight here: claimed when that one ends.
    if (this.waiting.size >= MAX_WAITING) this.waiting.clear();
    this.waiting.add(conversationId);
    this.worker.wake();
  }

  private async claim(instance: string, buckets: readonly string[], limit: number, until: number): Promise<Held[]> {
    const claimed = await claimSends(this.o.db, instance, limit, until - Date.now(), channelsOf(buckets));
    if (this.waiting.size > 0) {
      const busy = new Set([...this.worker.running(), ...claimed].map((s) => s.conversationId));
      for (const c of this.waiting) if (!busy.has(c)) this.waiting.delete(c);
    }
    return claimed.map(held);
  }

  private async process(s: Held, signal: AbortSignal, lease: RunLease): Promise<RunOutcome> {
    const { db, config } = this.o;
    const ctx = await loadForSend(db, s.messageId);
    // Only a queued text is sent: anything else was settled meanwhile (or the row is gone). Its job
    // is kept as finished, as a failed text's is, in case a retry wants it again.
    if (ctx === undefined || ctx.message.type !== 'text' || ctx.message.status !== 'queued') {
      return this.settle(s, lease, { messageId: s.messageId, next: 'failed', status: null });
    }
    const ref = { conversationId: ctx.message.conversationId, messageId: s.messageId, assignee: ctx.assignee };
    if (s.attempts > config.maxAttempts) {
      // Claimed again and again without an outcome ever recorded: its instances died mid-send.
      const message = `gave up after ${config.maxAttempts} attempts whose outcome was never recorded`;
      const change = { status: 'failed' as const, error: { code: 'ATTEMPTS_EXHAUSTED', message } };
      return this.settle(s, lease, { messageId: s.messageId, next: 'failed', status: { ref, change } });
    }
    if (this.o.files !== undefined && ctx.hasFiles) ctx.outgoing.attachments = await this.o.files.of(db, s.messageId);
    const result = await this.providers.send(ctx.outgoing, signal);
    if (!result.ok && result.retryable && this.worker.isStopping) {
      // Cut off by the shutdown: any instance sends it again at once (a new send: it may have gone).
      await releaseSends(db, this.worker.instance, [s.messageId], false).catch(() => {});
      return 'released';
    }
    const retry = !result.ok && result.retryable && s.attempts < config.maxAttempts;
    const retryAtMs = Date.now() + retryDelayMs(s.attempts, config.retryBaseMs);
    // Claimed again when it comes due, not at the next poll.
    if (retry) this.worker.dueAt(retryAtMs);
    if (!result.ok) this.o.log.warn({ message: s.messageId, code: result.code, retry }, 'channel send failed');
    const outcome: SendOutcome = result.ok
      ? {
          messageId: s.messageId,
          next: 'sent',
          status: { ref, change: { status: 'sent', externalId: result.externalId, error: null } },
        }
      : retry
        ? { messageId: s.messageId, next: { retryAt: new Date(retryAtMs).toISOString() }, status: null }
        : {
            messageId: s.messageId,
            next: 'failed',
            status: { ref, change: { status: 'failed', error: { code: result.code, message: result.message } } },
          };
    return this.settle(s, lease, outcome);
  }

  /**
   * Records an outcome, again and again while the store refuses it (its lease renewed meanwhile):
   * the text is never sent again for want of its outcome. Stopping, it tries while the lease
   * lasts; then the text is claimed again when the lease runs out, as after a crash.
   */
  private async settle(s: Held, lease: RunLease, outcome: SendOutcome): Promise<RunOutcome> {
    const next = typeof outcome.next === 'string' ? outcome.next : 'retried';
    for (let n = 0; ; n++) {
      try {
        await this.outcomes.record(outcome);
        // A text found no longer queued (settled meanwhile) records its job only: no send to count.
        if (next === 'retried' || outcome.status !== null) this.settled.emit({ channel: s.channel, outcome: next });
        return next === 'sent' ? 'done' : next;
      } catch (err) {
        if (lease.lost || (this.worker.isStopping && Date.now() >= lease.until)) {
          this.o.log.error({ err, message: outcome.messageId }, 'channel send outcome could not be recorded');
          return 'released';
        }
        this.o.log.warn({ err, message: outcome.messageId }, 'channel send outcome not recorded yet; trying again');
        await sleep(Math.min(MAX_RECORD_BACKOFF_MS, 25 * 2 ** n) * (0.5 + Math.random() / 2));
      }
    }
  }
}
