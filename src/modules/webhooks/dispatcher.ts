// Owns sending webhook deliveries in one instance: claim due deliveries (each claimed by exactly one
// instance), attempt up to CONCURRENCY at a time, record the outcome, schedule retries with
// exponential backoff and full jitter, and deactivate an endpoint that keeps failing, or whose
// owning API key was revoked or has expired (it is sent nothing more).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../../db/store.js';
import { Signal } from '../../lib/signal.js';
import { SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { PollLoop } from '../events/poll-loop.js';
import { attempt } from './deliver.js';
import { type ClaimedDelivery, claimDue, nextDueAt, recordAttempt, releaseLocks } from './deliveries-repository.js';
import { countFailure, deactivateWebhook, findTargets, ownerLapsed, resetFailures, type Target } from './repository.js';
import type { DeliveryStatus } from './schemas.js';

/** Attempts per delivery: with a 10 s base and a 4 h cap the retry windows add up to ~22 h. */
export const MAX_ATTEMPTS = 16;
export const RETRY_CAP_MS = 4 * 3600_000;
const CONCURRENCY = 8;
/** Longer than an attempt can take (5 s); a crashed instance's claims are free again after it. */
const LOCK_MS = 60_000;

/** Delay before the attempt after `attempts` failed ones: uniform in [0, min(cap, base·2^(n-1))). */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const window = Math.min(RETRY_CAP_MS, baseMs * 2 ** Math.min(attempts - 1, 40));
  return Math.floor(random() * window);
}

export interface DispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  pollMs: number;
  retryBaseMs: number;
  disableAfter: number;
  allowPrivate: boolean;
}

export class Dispatcher {
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly loop: PollLoop;
  /** Told the outcome of each recorded attempt: delivered, to be retried, or failed for good. */
  readonly outcomes = new Signal<'succeeded' | 'retry' | 'failed'>();

  constructor(private readonly o: DispatcherOptions) {
    this.loop = new PollLoop(
      () => this.step(),
      o.pollMs,
      (err) => o.log.warn({ err }, 'webhook dispatcher: claiming deliveries failed'),
    );
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  /** Stops claiming, interrupts attempts in flight and hands their claims back. */
  async stop(): Promise<void> {
    await this.loop.stop();
    this.shutdown.abort();
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private async step(): Promise<number | undefined> {
    const free = CONCURRENCY - this.inFlight.size;
    // All slots busy: a finishing attempt wakes the loop.
    if (free <= 0) return undefined;
    const claimed = await claimDue(this.o.db, this.instance, free, LOCK_MS);
    if (claimed.length > 0) {
      const ids = [...new Set(claimed.map((d) => d.webhookId))];
      const targets = new Map((await findTargets(this.o.db, ids)).map((t) => [t.id, t]));
      for (const d of claimed) this.launch(d, targets.get(d.webhookId));
    }
    if (claimed.length === free) return undefined;
    const next = await nextDueAt(this.o.db);
    return next === null ? undefined : next - Date.now();
  }

  private launch(d: ClaimedDelivery, target: Target | undefined) {
    const run = this.process(d, target)
      .catch((err) => this.o.log.error({ err, delivery: d.id }, 'webhook delivery could not be recorded'))
      .finally(() => {
        this.inFlight.delete(d.id);
        this.wake();
      });
    this.inFlight.set(d.id, run);
  }

  private async process(d: ClaimedDelivery, target: Target | undefined): Promise<void> {
    const { db, instance } = { db: this.o.db, instance: this.instance };
    // Deleted meanwhile (its deliveries went with it) or deactivated: nothing to send now.
    if (target === undefined || !target.active) return releaseLocks(db, instance, [d.id]);
    // Its key was revoked or has expired: the endpoint dies with it, and its deliveries wait as
    // those of any inactive endpoint do.
    if (ownerLapsed(target, Date.now())) {
      await withEvents(db, async (tx, outbox) => {
        const disabled = await deactivateWebhook(tx, target.id);
        if (disabled !== undefined) outbox.add({ type: 'webhook.disabled', actor: SYSTEM, data: disabled });
      });
      this.o.log.warn({ webhook: target.id }, 'webhook deactivated: its API key was revoked or has expired');
      return releaseLocks(db, instance, [d.id]);
    }
    const result = await attempt(target, d.id, d.payload, {
      allowPrivate: this.o.allowPrivate,
      shutdown: this.shutdown.signal,
    });
    if (result.interrupted) return releaseLocks(db, instance, [d.id]);

    const attempts = d.attempts + 1;
    let status: DeliveryStatus = 'failed';
    let nextAttemptAt: string | null = null;
    if (result.ok) status = 'succeeded';
    else if (result.retryable && attempts < MAX_ATTEMPTS) {
      status = 'pending';
      nextAttemptAt = new Date(Date.now() + retryDelayMs(attempts, this.o.retryBaseMs)).toISOString();
    }
    await withEvents(db, async (tx, outbox) => {
      const recorded = await recordAttempt(tx, d.id, instance, {
        status,
        responseCode: result.responseCode,
        error: result.error,
        durationMs: result.durationMs,
        nextAttemptAt,
      });
      if (!recorded) return;
      tx.onCommit(() => this.outcomes.emit(status === 'pending' ? 'retry' : status));
      if (result.ok) {
        await resetFailures(tx, target.id);
        return;
      }
      const disabled = await countFailure(tx, target.id, this.o.disableAfter);
      if (disabled !== undefined) {
        this.o.log.warn({ webhook: target.id }, 'webhook deactivated after repeated failures');
        outbox.add({ type: 'webhook.disabled', actor: SYSTEM, data: disabled });
      }
    });
  }
}
