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
  completeJobs,
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

/** One job of a batch (`JobHandler.batch`), with the context its own run would have. */
export interface BatchRun {
  job: ClaimedJob;
  ctx: JobContext;
}

/** How a job of a batch ended: null when it ran, else what it threw. */
export type BatchOutcome = null | { error: unknown };

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
  /**
   * Runs the jobs of this kind claimed together (up to `max` at a time) in one call instead of
   * `run` for each, so they can share one transaction. Resolves with each job's outcome in the
   * order given; a rejection is every job's error. Each job keeps its own lease, attempts and
   * end, exactly as a job run by `run`.
   */
  batch?: {
    max: number;
    /**
     * `complete(tx, runs)` records the jobs of `runs` done in `tx` in one statement, as each one's
     * `ctx.complete(tx)` would, and returns the runs it recorded; the others' jobs were cancelled,
     * rescheduled or taken over meanwhile (their runs must do nothing and end with LeaseLost).
     */
    run(runs: BatchRun[], complete: CompleteRuns): Promise<BatchOutcome[]>;
  };
}

/** Records several runs' jobs done in one transaction: see `JobHandler.batch`. */
export type CompleteRuns = (tx: Tx, runs: readonly BatchRun[]) => Promise<BatchRun[]>;

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

/**
 * Collects the runs of a batching kind that start in the same turn of the event loop (the jobs one
 * claim leased) and hands them to its handler together, `max` at a time; batches run side by side.
 */
class Batcher {
  private queue: { run: BatchRun; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    private readonly batch: NonNullable<JobHandler['batch']>,
    private readonly complete: CompleteRuns,
  ) {}

  add(run: BatchRun): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        while (this.queue.length > 0) void this.exec(this.queue.splice(0, Math.max(1, this.batch.max)));
      });
    });
  }

  private async exec(items: Batcher['queue']): Promise<void> {
    let outcomes: BatchOutcome[];
    try {
      outcomes = await this.batch.run(
        items.map((i) => i.run),
        this.complete,
      );
    } catch (err) {
      for (const i of items) i.reject(err);
      return;
    }
    items.forEach((i, n) => {
      const o = outcomes[n];
      if (o === null) i.resolve();
      else i.reject(o === undefined ? new Error('the batch gave no outcome for this job') : o.error);
    });
  }
}

export class JobRunner {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly batchers = new Map<string, Batcher>();
  /** What `completeRuns` needs of a run in flight: its job as claimed, and how to mark it recorded. */
  private readonly runsHeld = new WeakMap<JobContext, { id: string; version: number; recorded(): void }>();
  private readonly worker: LeaseWorker<ClaimedJob>;
  /** Told, with its kind, after a commit that wrote a job due now: the runtime tells the other instances. */
  readonly enqueued = new Signal<string>();

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
    if (handler.batch !== undefined) {
      this.batchers.set(handler.kind, new Batcher(handler.batch, (tx, runs) => this.completeRuns(tx, runs)));
    }
    this.worker.setSlots(handler.kind, handler.concurrency ?? 4, handler.claimBatch ?? 1);
  }

  /** Writes a job in `tx` (with a key: reschedules the live one); it is woken once `tx` commits. */
  async enqueue(tx: Tx, job: NewJob): Promise<string> {
    const id = await insertJob(tx, job);
    const at = job.runAt === undefined ? 0 : new Date(job.runAt).getTime();
    tx.onCommit(() => {
      // Due now: its kind is claimed for, here and (through the runtime) on the other instances.
      // Due later: only this instance's timer is set; the others find it at their next poll, which
      // reads when the next job comes due.
      if (at <= Date.now()) {
        this.worker.wake(job.kind);
        this.enqueued.emit(job.kind);
      } else this.worker.dueAt(at, true);
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

  /**
   * Another instance wrote a job, or a timer of the runtime's: look for due jobs now, of `kind` only
   * when it names one registered here, else of every kind.
   */
  wake(kind?: string): void {
    this.worker.wake(kind !== undefined && this.handlers.has(kind) ? kind : undefined);
  }

  /** Stops claiming; runs in flight are interrupted and hand their jobs back. */
  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** Deletes jobs finished more than JOB_RETENTION_DAYS ago. */
  purge(now = Date.now()): Promise<number> {
    return purgeJobs(this.o.db, new Date(now - JOB_RETENTION_DAYS * DAY_MS).toISOString());
  }

  private async completeRuns(tx: Tx, runs: readonly BatchRun[]): Promise<BatchRun[]> {
    const held = runs.map((r) => ({ run: r, held: this.runsHeld.get(r.ctx)! }));
    const done = await completeJobs(
      tx,
      this.worker.instance,
      held.map((h) => h.held),
    );
    return held
      .filter((h) => done.has(h.held.id))
      .map((h) => {
        h.held.recorded();
        return h.run;
      });
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
    this.runsHeld.set(ctx, {
      id: job.id,
      version: job.version,
      recorded: () => {
        completed = true;
      },
    });
    if (job.attempts > maxAttempts) {
      // Claimed again and again without an end ever recorded: its instances died mid-run.
      await recordJobFailure(db, held, null, `gave up after ${maxAttempts} runs whose end was never recorded`);
      return 'failed';
    }
    try {
      const batcher = this.batchers.get(job.kind);
      await (batcher === undefined ? handler.run(job, ctx) : batcher.add({ job, ctx }));
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
      if (retryAt !== null) this.worker.dueAt(Date.parse(retryAt));
      return retry ? 'retried' : 'failed';
    }
  }
}
