// Owns the skeleton every background worker of this service shares: claim due items under a lease
// (a crashed instance's items come back when its lease runs out), run at most N at a time per bucket
// (a job kind, or one queue), keep the in-flight map, renew the leases of long runs (a run whose
// lease was taken over is told through its signal), wake on commits and on a timer to the next due
// item, and on stop interrupt what runs and wait for it. What a claim, a lease and an outcome are
// in the store is the source's: the jobs table (runner.ts) and webhook deliveries are sources.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { Signal } from '../../lib/signal.js';
import { PollLoop } from '../events/poll-loop.js';

/** An item a source leased to this worker. */
export interface Leased {
  id: string;
  /** Whose slots it takes (a job's kind). */
  bucket: string;
}

export interface LeaseSource<T extends Leased> {
  /** Leases up to `limit` due items of `bucket` to `instance` until `until` (ms). */
  claim(instance: string, bucket: string, limit: number, until: number): Promise<T[]>;
  /** When the earliest item of `buckets` comes due (ms), or null when none waits. */
  nextDueAt(buckets: readonly string[]): Promise<number | null>;
  /** Extends this instance's leases; returns the ids still held. Without it, leases are not renewed. */
  renew?(instance: string, ids: string[], until: number): Promise<string[]>;
}

/** How a run ended, as the metrics count it (per bucket). */
export type RunOutcome = 'done' | 'retried' | 'failed' | 'released';

export interface LeaseWorkerOptions<T extends Leased> {
  /** Names the worker in logs. */
  name: string;
  source: LeaseSource<T>;
  log: FastifyBaseLogger;
  /** The longest wait between two looks for due items (other instances' items, expired leases). */
  pollMs: number;
  leaseMs: number;
  /** Runs one leased item; resolves with its outcome once recorded. `signal`: stop, or lease lost. */
  run(item: T, signal: AbortSignal): Promise<RunOutcome>;
}

interface Flight<T> {
  item: T;
  abort: AbortController;
  run?: Promise<void>;
}

export const instanceName = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

export class LeaseWorker<T extends Leased> {
  readonly instance = instanceName();
  /** Each run's outcome, by bucket (the metrics count them). */
  readonly settled = new Signal<{ bucket: string; outcome: RunOutcome }>();
  private readonly slots = new Map<string, number>();
  private readonly flights = new Map<string, Flight<T>>();
  private readonly busy = new Map<string, number>();
  private readonly loop: PollLoop;
  private renewTimer: NodeJS.Timeout | null = null;
  private stopping = false;

  constructor(private readonly o: LeaseWorkerOptions<T>) {
    this.loop = new PollLoop(
      () => this.step(),
      o.pollMs,
      (err) => o.log.warn({ err }, `${o.name}: claiming failed`),
    );
  }

  /** Gives `bucket` `concurrency` slots in this instance (and claims for it from now on). */
  setSlots(bucket: string, concurrency: number): void {
    this.slots.set(bucket, Math.max(1, concurrency));
    this.wake();
  }

  get inFlight(): number {
    return this.flights.size;
  }

  start(): void {
    this.stopping = false;
    this.loop.start();
    if (this.o.source.renew !== undefined && this.renewTimer === null) {
      // Four renewals per lease: two may fail before a run outlives its lease.
      this.renewTimer = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.o.leaseMs / 4)));
      this.renewTimer.unref();
    }
  }

  wake(): void {
    this.loop.wake();
  }

  /** Stops claiming, interrupts the runs in flight and waits for them (they hand their leases back). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    if (this.renewTimer !== null) clearInterval(this.renewTimer);
    this.renewTimer = null;
    for (const f of this.flights.values()) f.abort.abort();
    await Promise.allSettled([...this.flights.values()].map((f) => f.run));
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  private async step(): Promise<number | undefined> {
    const buckets = [...this.slots.keys()];
    let again = false;
    for (const bucket of buckets) {
      const free = (this.slots.get(bucket) ?? 0) - (this.busy.get(bucket) ?? 0);
      // All its slots busy: a run ending wakes the loop.
      if (free <= 0) continue;
      const claimed = await this.o.source.claim(this.instance, bucket, free, Date.now() + this.o.leaseMs);
      for (const item of claimed) if (!this.flights.has(item.id)) this.launch(item);
      if (claimed.length === free) again = true;
    }
    if (again) return 0;
    if (buckets.length === 0) return undefined;
    const next = await this.o.source.nextDueAt(buckets);
    return next === null ? undefined : Math.max(0, next - Date.now());
  }

  private launch(item: T): void {
    const flight: Flight<T> = { item, abort: new AbortController() };
    this.flights.set(item.id, flight);
    this.busy.set(item.bucket, (this.busy.get(item.bucket) ?? 0) + 1);
    flight.run = this.o
      .run(item, flight.abort.signal)
      .then((outcome) => this.settled.emit({ bucket: item.bucket, outcome }))
      .catch((err) => this.o.log.error({ err, id: item.id }, `${this.o.name}: run failed unexpectedly`))
      .finally(() => {
        this.flights.delete(item.id);
        this.busy.set(item.bucket, (this.busy.get(item.bucket) ?? 1) - 1);
        this.wake();
      });
  }

  private async renew(): Promise<void> {
    const renew = this.o.source.renew;
    if (renew === undefined || this.flights.size === 0) return;
    const ids = [...this.flights.keys()];
    try {
      const held = new Set(await renew.call(this.o.source, this.instance, ids, Date.now() + this.o.leaseMs));
      // Another instance holds it now (its lease ran out) or it is gone: this run records nothing.
      for (const id of ids) if (!held.has(id)) this.flights.get(id)?.abort.abort();
    } catch (err) {
      this.o.log.warn({ err }, `${this.o.name}: renewing leases failed`);
    }
  }
}
