// Owns the skeleton every background worker of this service shares: claim due items under a lease
// (a crashed instance's items come back when its lease runs out), run at most N at a time per bucket
// (a job kind, a channel, or one queue), keep the in-flight map, renew the leases of long runs (a run
// whose lease was taken over is told through its signal), wake on commits and on a timer to the next
// due item, and on stop interrupt what runs and wait for it. What a claim, a lease and an outcome are
// in the store is the source's: the jobs table (runner.ts), webhook deliveries and texts' send jobs
// (src/modules/channels/dispatcher.ts) are sources.
//
// Texts need a few things more, each opt-in (docs/jobs.md): a bucket claimed for only once a batch
// of its slots is free, several buckets claimed in one statement, claims only when something may be
// claimable, and items leased outside a claim (in the transaction that wrote them) adopted here.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { Signal } from '../../lib/signal.js';
import { PollLoop } from '../events/poll-loop.js';

/** An item a source leased to this worker. */
export interface Leased {
  id: string;
  /** Whose slots it takes (a job's kind, a text's channel). */
  bucket: string;
}

export interface LeaseSource<T extends Leased> {
  /** Leases up to `limit` due items of `bucket` to `instance` until `until` (ms). */
  claim(instance: string, bucket: string, limit: number, until: number): Promise<T[]>;
  /**
   * Leases up to `limit` due items of any of `buckets` in one go. When given, the worker claims
   * through it alone, for all the buckets with free slots at once.
   */
  claimAcross?(instance: string, buckets: readonly string[], limit: number, until: number): Promise<T[]>;
  /** When the earliest item of `buckets` comes due (ms), or null when none waits. */
  nextDueAt(buckets: readonly string[]): Promise<number | null>;
  /** Extends this instance's leases; returns the ids still held. Without it, leases are not renewed. */
  renew?(instance: string, ids: string[], until: number): Promise<string[]>;
  /** Hands back leases on items never run here (adopted ones): needed to adopt. */
  release?(instance: string, items: T[]): Promise<void>;
}

/** How a run ended, as the metrics count it (per bucket). */
export type RunOutcome = 'done' | 'retried' | 'failed' | 'released';

/** A run's lease as this worker knows it, kept current while the run lasts. */
export interface RunLease {
  /** When it runs out, as last written (ms). */
  readonly until: number;
  /** Another instance holds the item now (or it is gone): nothing of the run may be recorded. */
  readonly lost: boolean;
}

export interface LeaseWorkerOptions<T extends Leased> {
  /** Names the worker in logs. */
  name: string;
  source: LeaseSource<T>;
  log: FastifyBaseLogger;
  /** The longest wait between two looks for due items (other instances' items, expired leases). */
  pollMs: number;
  leaseMs: number;
  /**
   * Runs one leased item; resolves with its outcome once recorded. `signal`: stop, or the lease
   * lost or about to be.
   */
  run(item: T, signal: AbortSignal, lease: RunLease): Promise<RunOutcome>;
  /**
   * Claims only when something may be claimable: when woken, when an item is due, at each poll,
   * when a run ends in a bucket the last claim left out for want of slots, and when this says so
   * of a run that ended. Without it, every step claims.
   */
  claimAfterRun?(item: T, outcome: RunOutcome | undefined): boolean;
  /**
   * When renewing fails, runs whose lease has less than this left are aborted, so they end before
   * another instance may claim their item. Without it, they go on.
   */
  abortWithinMs?: number;
  /** An adopted item waiting for a slot longer than this is handed back (its lease could run out mid-run). */
  adoptMaxWaitMs?: number;
}

interface Flight<T> {
  item: T;
  abort: AbortController;
  lease: { until: number; lost: boolean };
  run?: Promise<void>;
}

interface Slots {
  concurrency: number;
  /** The free slots a bucket needs before it is claimed for. */
  batch: number;
}

export const instanceName = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

export class LeaseWorker<T extends Leased> {
  readonly instance = instanceName();
  /** Each run's outcome, by bucket (the metrics count them). */
  readonly settled = new Signal<{ bucket: string; outcome: RunOutcome }>();
  private readonly slots = new Map<string, Slots>();
  private readonly flights = new Map<string, Flight<T>>();
  private readonly busy = new Map<string, number>();
  /** Items adopted while their bucket's slots were taken, oldest first, with when they were adopted. */
  private readonly adopted: { item: T; until: number; at: number }[] = [];
  private readonly adoptedIn = new Map<string, number>();
  /** Buckets the last claim left out for want of slots: claimed again once a run of theirs ends. */
  private readonly excluded = new Set<string>();
  private readonly loop: PollLoop;
  private renewTimer: NodeJS.Timeout | null = null;
  private renewing = false;
  private stopping = false;
  /** Every bucket must be claimed for at the next step (a wake-up that named none, a start). */
  private wantAll = true;
  /** Buckets that must be claimed for at the next step (woken by name, a run of theirs ended). */
  private readonly wanted = new Set<string>();
  /** When every bucket was last claimed for: they all are again a poll later. */
  private lastClaimAt = 0;
  /** When the earliest claimable item known at the last claim comes due (ms). */
  private nextDueAt = 0;

  constructor(private readonly o: LeaseWorkerOptions<T>) {
    this.loop = new PollLoop(
      () => this.step(),
      o.pollMs,
      (err) => o.log.warn({ err }, `${o.name}: claiming failed`),
    );
  }

  /**
   * Gives `bucket` `concurrency` slots in this instance (and claims for it from now on), claimed
   * for once `batch` of them are free: a claim reads the due items in order and leases them in one
   * write, so a batch costs about what one does.
   */
  setSlots(bucket: string, concurrency: number, batch = 1): void {
    const c = Math.max(1, concurrency);
    this.slots.set(bucket, { concurrency: c, batch: Math.min(c, Math.max(1, batch)) });
    this.wake();
  }

  get inFlight(): number {
    return this.flights.size;
  }

  /** The items running here. */
  *running(): Generator<T> {
    for (const f of this.flights.values()) yield f.item;
  }

  start(): void {
    this.stopping = false;
    this.loop.start();
    if (this.o.source.renew !== undefined && this.renewTimer === null) {
      // Four renewals per lease: two may fail before a run outlives its lease.
      this.renewTimer = setInterval(() => void this.renew(), this.renewEvery);
      this.renewTimer.unref();
    }
  }

  /**
   * Something may be claimable (a commit here, another instance's, a timer): look now, in `bucket`
   * alone when named (the others wait for their own wake-ups, timer or poll), else in all.
   */
  wake(bucket?: string): void {
    if (bucket === undefined) this.wantAll = true;
    else this.wanted.add(bucket);
    this.loop.wake();
  }

  /**
   * An item comes due at `at` (ms), a retry this worker recorded or one written here for later:
   * claimed then, not at the next poll. `rearm`: set the timer now (else the next step does).
   */
  dueAt(at: number, rearm = false): void {
    if (at >= this.nextDueAt) return;
    this.nextDueAt = at;
    if (rearm) this.loop.wake();
  }

  /**
   * Whether an item of `bucket` leased now, outside a claim, would find a slot here: the worker
   * runs, and the bucket's slots are not all taken by runs and adopted items.
   */
  canTake(bucket: string): boolean {
    const s = this.slots.get(bucket);
    return !this.stopping && s !== undefined && this.used(bucket) < s.concurrency;
  }

  /**
   * Runs an item leased to this instance outside a claim (until `until`, ms): at once when its
   * bucket has a free slot, else when one frees (or it is handed back after `adoptMaxWaitMs`).
   */
  adopt(item: T, until: number): void {
    if (this.stopping) {
      void this.handBack([item]);
      return;
    }
    if (this.flights.has(item.id)) return;
    if ((this.busy.get(item.bucket) ?? 0) < (this.slots.get(item.bucket)?.concurrency ?? 1)) {
      this.launch(item, until);
    } else {
      this.adopted.push({ item, until, at: Date.now() });
      this.adoptedIn.set(item.bucket, (this.adoptedIn.get(item.bucket) ?? 0) + 1);
    }
  }

  /** Stops claiming, interrupts the runs in flight and waits for them (they hand their leases back). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    // Leases are no longer renewed: what is in flight ends while they last, or is claimed again after.
    if (this.renewTimer !== null) clearInterval(this.renewTimer);
    this.renewTimer = null;
    for (const f of this.flights.values()) f.abort.abort(new Error(`the ${this.o.name} is stopping`));
    await Promise.allSettled([...this.flights.values()].map((f) => f.run));
    await this.handBack([...this.takeAdopted(() => true)].map((a) => a.item));
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  private get renewEvery(): number {
    return Math.max(1, Math.floor(this.o.leaseMs / 4));
  }

  private used(bucket: string): number {
    return (this.busy.get(bucket) ?? 0) + (this.adoptedIn.get(bucket) ?? 0);
  }

  /** Gives back leases on adopted items never run here, so that any instance claims them at once. */
  private async handBack(items: T[]): Promise<void> {
    if (items.length === 0 || this.o.source.release === undefined) return;
    try {
      await this.o.source.release(this.instance, items);
    } catch (err) {
      // Their leases run out instead, and the items are claimed then.
      this.o.log.warn({ err }, `${this.o.name}: handing back leases failed`);
    }
  }

  /** Removes the adopted items `pick` chooses, oldest first, each as it is chosen. */
  private *takeAdopted(
    pick: (a: { item: T; at: number }) => boolean,
  ): Generator<{ item: T; until: number; at: number }> {
    for (let i = 0; i < this.adopted.length; ) {
      const a = this.adopted[i]!;
      if (!pick(a)) {
        i++;
        continue;
      }
      this.adopted.splice(i, 1);
      this.adoptedIn.set(a.item.bucket, (this.adoptedIn.get(a.item.bucket) ?? 1) - 1);
      yield a;
    }
  }

  private async step(): Promise<number | undefined> {
    const now = Date.now();
    if (this.adopted.length > 0) {
      // Adopted items go first. One that waited as long as a run may take would risk its lease
      // running out mid-run (and a second instance running it too): it is handed back instead.
      const maxWait = this.o.adoptMaxWaitMs ?? this.o.leaseMs / 2;
      const stale = [...this.takeAdopted((a) => now - a.at > maxWait)].map((a) => a.item);
      // Launched as they are taken, so a bucket's slots are counted with the ones just filled.
      const free = (a: { item: T }) =>
        (this.busy.get(a.item.bucket) ?? 0) < (this.slots.get(a.item.bucket)?.concurrency ?? 1);
      for (const a of this.takeAdopted(free)) if (!this.flights.has(a.item.id)) this.launch(a.item, a.until);
      if (stale.length > 0) {
        await this.handBack(stale);
        this.wantAll = true;
      }
    }
    // The buckets with a batch's worth of free slots are claimed for; the others wait for their runs
    // to end (which wake the loop), so a bucket whose runs hang holds up only itself.
    const eligible: { bucket: string; free: number }[] = [];
    this.excluded.clear();
    for (const [bucket, s] of this.slots) {
      const free = s.concurrency - this.used(bucket);
      if (free >= s.batch) eligible.push({ bucket, free });
      else this.excluded.add(bucket);
    }
    if (eligible.length === 0) return undefined;
    // Every bucket is claimed for when woken without a name, at each poll and once the earliest
    // item known comes due; in between, only the buckets woken by name or whose runs ended: a
    // burst of one kind does not look for the others after every run.
    const pollAt = this.lastClaimAt + this.o.pollMs;
    const all = this.wantAll || now >= pollAt || now >= this.nextDueAt;
    const claimable = all ? eligible : eligible.filter((e) => this.wanted.has(e.bucket));
    if (claimable.length === 0) return Math.min(this.nextDueAt, pollAt) - now;
    const { claimAcross } = this.o.source;
    this.wantAll = false;
    this.wanted.clear();
    if (all || claimAcross !== undefined) {
      this.lastClaimAt = now;
      // Known again once a claim leaves something behind (the read below), or told by dueAt.
      this.nextDueAt = Number.POSITIVE_INFINITY;
    }
    const until = now + this.o.leaseMs;
    let again = false;
    if (claimAcross !== undefined) {
      // One statement for every bucket with room, whichever were woken.
      const limit = Math.min(...eligible.map((e) => e.free));
      const claimed = await claimAcross.call(
        this.o.source,
        this.instance,
        eligible.map((e) => e.bucket),
        limit,
        until,
      );
      // A claim of ours still in flight (its lease ran out under a very slow store, and we claimed
      // it again) is renewed, not run a second time.
      for (const item of claimed) if (!this.flights.has(item.id)) this.launch(item, until);
      if (claimed.length === limit) {
        again = true;
        this.wantAll = true;
      }
    } else {
      for (const { bucket, free } of claimable) {
        const claimed = await this.o.source.claim(this.instance, bucket, free, until);
        for (const item of claimed) if (!this.flights.has(item.id)) this.launch(item, until);
        if (claimed.length === free) {
          again = true;
          this.wanted.add(bucket);
        }
      }
    }
    if (again) return 0;
    const next = await this.o.source.nextDueAt(eligible.map((e) => e.bucket));
    this.nextDueAt = next ?? Number.POSITIVE_INFINITY;
    return next === null ? undefined : Math.max(0, next - Date.now());
  }

  private launch(item: T, until: number): void {
    const flight: Flight<T> = { item, abort: new AbortController(), lease: { until, lost: false } };
    this.flights.set(item.id, flight);
    this.busy.set(item.bucket, (this.busy.get(item.bucket) ?? 0) + 1);
    let outcome: RunOutcome | undefined;
    flight.run = this.o
      .run(item, flight.abort.signal, flight.lease)
      .then((o) => {
        outcome = o;
        this.settled.emit({ bucket: item.bucket, outcome: o });
      })
      .catch((err) => this.o.log.error({ err, id: item.id }, `${this.o.name}: run failed unexpectedly`))
      .finally(() => {
        this.flights.delete(item.id);
        this.busy.set(item.bucket, (this.busy.get(item.bucket) ?? 1) - 1);
        // Its slot is free: adopted items take it, and its bucket may be claimed for again.
        const after = this.o.claimAfterRun;
        if (after === undefined || this.excluded.has(item.bucket) || after(item, outcome)) this.wanted.add(item.bucket);
        this.loop.wake();
      });
  }

  /** Renews the leases held since the last renewal or longer, in one statement. */
  private async renew(): Promise<void> {
    const renew = this.o.source.renew;
    if (renew === undefined || this.renewing || this.flights.size === 0) return;
    const now = Date.now();
    const every = this.renewEvery;
    const due = [...this.flights.values()].filter((f) => f.lease.until - now < this.o.leaseMs - every);
    if (due.length === 0) return;
    this.renewing = true;
    const until = now + this.o.leaseMs;
    try {
      const ids = due.map((f) => f.item.id);
      const held = new Set(await renew.call(this.o.source, this.instance, ids, until));
      for (const f of due) {
        if (held.has(f.item.id)) f.lease.until = until;
        else {
          // Another instance holds it now (its lease ran out) or it is gone: this run records nothing.
          f.lease.lost = true;
          f.abort.abort(new Error('the lease on this item was lost'));
        }
      }
    } catch (err) {
      this.o.log.warn({ err }, `${this.o.name}: renewing leases failed`);
      const within = this.o.abortWithinMs;
      if (within !== undefined) {
        for (const f of due) {
          if (f.lease.until - Date.now() < within) f.abort.abort(new Error('the lease could not be renewed'));
        }
      }
    } finally {
      this.renewing = false;
    }
  }
}
