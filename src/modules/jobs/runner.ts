// Owns running jobs in one instance: handlers registered per kind, each with its own concurrency,
// attempts and backoff; jobs written by `enqueue` in the caller's transaction and woken at commit
// (here, and through the runtime's Redis fan-out on other instances); each due job leased to one
// instance, run, and its end recorded under that lease. A handler whose work is a write records the
// job done in its own transaction (`ctx.complete(tx)`), so the work and its record commit together:
// exactly once per job, across instances and restarts. A handler with an outside effect (HTTP) runs
// at least once: a crash between the effect and its record runs it again after the lease.
import type { FastifyBaseLogger } from 'fastify';
import type { Executor, Tx } from '../../db/types.js';
import { Signal } from '../../lib/signal.js';
import { retryDelayMs } from './backoff.js';
import { LeaseWorker, type RunOutcome } from './lease-worker.js';
import {
  type ClaimedJob,
  cancelJob,
  claimJobs,
  completeJob,
  insertJob,
  type NewJob,
  nextJobDueAt,
  purgeJobs,
  recordJobFailure,
  releaseJobs,
  renewJobs,
} from './repository.js';

export type { ClaimedJob, NewJob } from './repository.js';

/** Thrown by `complete` when the run no longer holds its job: its transaction must roll back. */
export class LeaseLost extends Error {
  constructor(id: string) {
    super(`job ${id} is no longer held by this run (cancelled, rescheduled or its lease ran out)`);
  }
}

export interface JobContext {
  /** Aborted when the instance stops or the run's lease was lost. */
  signal: AbortSignal;
  /**
   * Records the job done in `tx`, the handler's own transaction, so its work and the record commit
   * together. Throws LeaseLost (rolling `tx` back) when the job was cancelled, rescheduled or taken
   * over meanwhile.
   */
  complete(tx: Tx): Promise<void>;
}

export interface JobHandler {
  kind: string;
  /** Runs of this kind at once in one instance (default 4). */
  concurrency?: number;
  /**
   * Free slots needed before this kind is claimed for (default 1): a burst of due jobs is then
   * claimed a batch per statement instead of one each time a run ends.
   */
  claimBatch?: number;
  /** Runs before the job fails for good (default 8); a run cut short by a crash counts. */
  maxAttempts?: number;
  /** The backoff's base (default 5 s): src/modules/jobs/backoff.ts. */
  retryBaseMs?: number;
  run(job: ClaimedJob, ctx: JobContext): Promise<void>;
}

export interface JobRunnerOptions {
  db: Executor;
  log: FastifyBaseLogger;
  pollMs: number;
  /** How long a claim holds a job; renewed while the run lasts. */
  leaseMs: number;
}

/** The days a finished job is kept (then purged). */
export const JOB_RETENTION_DAYS = 7;
const DAY_MS = 86_400_000;

export class JobRunner {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly worker: LeaseWorker<ClaimedJob>;
  /** Told after a commit that wrote a job: the runtime tells the other instances. */
  readonly enqueued = new Signal<void>();

  constructor(private readonly o: JobRunnerOptions) {
    this.worker = new LeaseWorker<ClaimedJob>({
      name: 'job runner',
      log: o.log,
      pollMs: o.pollMs,
      leaseMs: o.leaseMs,
      source: {
        claim: (instance, kind, limit, until) => claimJobs(o.db, instance, kind, limit, until),
        nextDueAt: (kinds) => nextJobDueAt(o.db, kinds),
        renew: (instance, ids, until) => renewJobs(o.db, instance, ids, until),
      },
      run: (job, signal) => this.run(job, signal),
    });
  }

  /** Each run's outcome by kind (the metrics count them). */
  get settled() {
    return this.worker.settled;
  }

  get instance(): string {
    return this.worker.instance;
  }

  /** The kinds registered here. */
  kinds(): string[] {
    return [...this.handlers.keys()];
  }

  register(handler: JobHandler): void {
    if (this.handlers.has(handler.kind)) throw new Error(`a handler for job kind ${handler.kind} exists already`);
    this.handlers.set(handler.kind, handler);
    this.worker.setSlots(handler.kind, handler.concurrency ?? 4, handler.claimBatch ?? 1);
  }

  /** Writes a job in `tx` (with a key: reschedules the live one); it is woken once `tx` commits. */
  async enqueue(tx: Tx, job: NewJob): Promise<string> {
    const id = await insertJob(tx, job);
    tx.onCommit(() => {
      this.worker.wake();
      this.enqueued.emit();
    });
    return id;
  }

  /** Cancels the live job of `kind` and `key` in `tx`; false when there is none. */
  cancel(tx: Executor, kind: string, key: string): Promise<boolean> {
    return cancelJob(tx, kind, key);
  }

  start(): void {
    this.worker.start();
  }

  /** Another instance wrote a job, or a timer of the runtime's: look for due jobs now. */
  wake(): void {
    this.worker.wake();
  }

  /** Stops claiming; runs in flight are interrupted and hand their jobs back. */
  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** Deletes jobs finished more than JOB_RETENTION_DAYS ago. */
  purge(now = Date.now()): Promise<number> {
    return purgeJobs(this.o.db, new Date(now - JOB_RETENTION_DAYS * DAY_MS).toISOString());
  }

  private async run(job: ClaimedJob, signal: AbortSignal): Promise<RunOutcome> {
    const { db, log } = this.o;
    const handler = this.handlers.get(job.kind)!;
    const held = { id: job.id, instance: this.worker.instance, version: job.version };
    const maxAttempts = handler.maxAttempts ?? 8;
    let completed = false;
    const ctx: JobContext = {
      signal,
      complete: async (tx) => {
        if (!(await completeJob(tx, held))) throw new LeaseLost(job.id);
        completed = true;
      },
    };
    if (job.attempts > maxAttempts) {
      // Claimed again and again without an end ever recorded: its instances died mid-run.
      await recordJobFailure(db, held, null, `gave up after ${maxAttempts} runs whose end was never recorded`);
      return 'failed';
    }
    try {
      await handler.run(job, ctx);
      if (!completed && !(await completeJob(db, held))) {
        log.warn({ job: job.id, kind: job.kind }, 'job ran, but its lease was lost before it was recorded done');
      }
      return 'done';
    } catch (err) {
      if (err instanceof LeaseLost) {
        // Cancelled or rescheduled meanwhile (the new schedule stands) or taken over: nothing to record.
        await releaseJobs(db, held.instance, [job.id], true);
        return 'released';
      }
      if (signal.aborted && this.worker.isStopping) {
        // Cut off by the shutdown: any instance runs it again at once.
        await releaseJobs(db, held.instance, [job.id], true).catch(() => {});
        return 'released';
      }
      const retry = job.attempts < maxAttempts;
      const retryAt = retry
        ? new Date(Date.now() + retryDelayMs(job.attempts, handler.retryBaseMs ?? 5000)).toISOString()
        : null;
      const message = err instanceof Error ? err.message : String(err);
      log.warn({ err, job: job.id, kind: job.kind, retry }, 'job failed');
      await recordJobFailure(db, held, retryAt, message.slice(0, 1000));
      return retry ? 'retried' : 'failed';
    }
  }
}
