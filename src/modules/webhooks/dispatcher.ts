// Owns sending webhook deliveries in one instance, on the shared lease worker (src/modules/jobs/
// lease-worker.ts: claim with a lease, in-flight map, poll loop, release on stop): attempt up to
// CONCURRENCY at a time, record the outcome, schedule retries with the shared backoff, and
// deactivate an endpoint that keeps failing, or whose owning API key was revoked or has expired
// (it is sent nothing more). Deliveries keep their own table: it carries their per-attempt record.
import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../../db/store.js';
import { Signal } from '../../lib/signal.js';
import { SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { retryDelayMs } from '../jobs/backoff.js';
import { LeaseWorker, type RunOutcome } from '../jobs/lease-worker.js';
import { attempt } from './deliver.js';
import { type ClaimedDelivery, claimDue, nextDueAt, recordAttempt, releaseLocks } from './deliveries-repository.js';
import { countFailure, deactivateWebhook, findTargets, ownerLapsed, resetFailures, type Target } from './repository.js';
import type { DeliveryStatus } from './schemas.js';

/** Attempts per delivery: with a 10 s base and the backoff's 4 h cap the retry windows add up to ~22 h. */
export const MAX_ATTEMPTS = 16;
const CONCURRENCY = 8;
/** Longer than an attempt can take (5 s); a crashed instance's claims are free again after it. */
const LOCK_MS = 60_000;
/** The worker's one bucket: the kind webhook deliveries are counted under (docs/jobs.md). */
export const DELIVERY_KIND = 'webhook.delivery';

export interface DispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  pollMs: number;
  retryBaseMs: number;
  disableAfter: number;
  allowPrivate: boolean;
}

/** A claimed delivery with its endpoint (undefined: deleted meanwhile), read once per claim. */
type Claimed = ClaimedDelivery & { bucket: string; target: Target | undefined };

export class Dispatcher {
  private readonly worker: LeaseWorker<Claimed>;
  /** Told the outcome of each recorded attempt: delivered, to be retried, or failed for good. */
  readonly outcomes = new Signal<'succeeded' | 'retry' | 'failed'>();

  constructor(private readonly o: DispatcherOptions) {
    this.worker = new LeaseWorker<Claimed>({
      name: 'webhook dispatcher',
      log: o.log,
      pollMs: o.pollMs,
      leaseMs: LOCK_MS,
      source: {
        claim: async (instance, _bucket, limit, until) => {
          const claimed = await claimDue(o.db, instance, limit, until - Date.now());
          if (claimed.length === 0) return [];
          const targets = new Map(
            (await findTargets(o.db, [...new Set(claimed.map((d) => d.webhookId))])).map((t) => [t.id, t]),
          );
          return claimed.map((d) => ({ ...d, bucket: DELIVERY_KIND, target: targets.get(d.webhookId) }));
        },
        nextDueAt: () => nextDueAt(o.db),
      },
      run: (d, signal) => this.process(d, signal),
    });
    this.worker.setSlots(DELIVERY_KIND, CONCURRENCY);
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

  /** Stops claiming, interrupts attempts in flight and hands their claims back. */
  stop(): Promise<void> {
    return this.worker.stop();
  }

  private async process(d: Claimed, signal: AbortSignal): Promise<RunOutcome> {
    const { db } = this.o;
    const instance = this.worker.instance;
    const target = d.target;
    // Deleted meanwhile (its deliveries went with it) or deactivated: nothing to send now.
    if (target === undefined || !target.active) {
      await releaseLocks(db, instance, [d.id]);
      return 'released';
    }
    // Its key was revoked or has expired: the endpoint dies with it, and its deliveries wait as
    // those of any inactive endpoint do.
    if (ownerLapsed(target, Date.now())) {
      await withEvents(db, async (tx, outbox) => {
        const disabled = await deactivateWebhook(tx, target.id);
        if (disabled !== undefined) outbox.add({ type: 'webhook.disabled', actor: SYSTEM, data: disabled });
      });
      this.o.log.warn({ webhook: target.id }, 'webhook deactivated: its API key was revoked or has expired');
      await releaseLocks(db, instance, [d.id]);
      return 'released';
    }
    const result = await attempt(target, d.id, d.payload, { allowPrivate: this.o.allowPrivate, shutdown: signal });
    if (result.interrupted) {
      await releaseLocks(db, instance, [d.id]);
      return 'released';
    }

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
    return status === 'succeeded' ? 'done' : status === 'pending' ? 'retried' : 'failed';
  }
}
