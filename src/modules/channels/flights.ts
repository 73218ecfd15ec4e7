// Owns the sends one dispatcher has in flight: how many each channel holds (each channel has its
// own slots, so a provider that hangs delays its channel only), and their leases, renewed for as
// long as a send lasts (an SMTP server may take minutes to answer; an outcome the store refuses is
// recorded again and again). A send whose lease cannot be renewed is told to end (its signal) while
// its lease still outlasts the send timeout, so it is over before another instance may claim it.
import type { FastifyBaseLogger } from 'fastify';
import type { Executor } from '../../db/types.js';
import { type ClaimedSend, renewLeases } from './sends-repository.js';

export interface Flight {
  send: ClaimedSend;
  /** Aborted to end the send early: the instance is stopping, or its lease is being lost. */
  readonly abort: AbortController;
  /** When its lease runs out, as last written (ms). */
  leaseUntil: number;
  /** Another instance holds its job now (or it is gone): nothing of it is recorded here any more. */
  lost: boolean;
  run?: Promise<void>;
}

export interface FlightsOptions {
  db: Executor;
  instance: string;
  leaseMs: number;
  sendTimeoutMs: number;
  log: FastifyBaseLogger;
}

export class Flights {
  private readonly byId = new Map<string, Flight>();
  private readonly busy = new Map<string, number>();
  /** How often leases are renewed: four times a lease, so two renewals may fail before it matters. */
  private readonly every: number;
  private readonly timer: NodeJS.Timeout;
  private renewing = false;

  constructor(private readonly o: FlightsOptions) {
    this.every = Math.max(1, Math.floor(o.leaseMs / 4));
    // Unref'd: it never keeps the process alive. A tick with nothing held long costs no statement.
    this.timer = setInterval(() => void this.renew(), this.every);
    this.timer.unref();
  }

  get size(): number {
    return this.byId.size;
  }

  has(messageId: string): boolean {
    return this.byId.has(messageId);
  }

  /** Sends in flight on `channel`. */
  in(channel: string): number {
    return this.busy.get(channel) ?? 0;
  }

  all(): IterableIterator<Flight> {
    return this.byId.values();
  }

  add(send: ClaimedSend): Flight {
    const flight: Flight = { send, abort: new AbortController(), leaseUntil: send.leaseUntil, lost: false };
    this.byId.set(send.messageId, flight);
    this.busy.set(send.channel, this.in(send.channel) + 1);
    return flight;
  }

  delete(flight: Flight): void {
    if (this.byId.get(flight.send.messageId) !== flight) return;
    this.byId.delete(flight.send.messageId);
    this.busy.set(flight.send.channel, this.in(flight.send.channel) - 1);
  }

  abortAll(): void {
    for (const f of this.byId.values()) f.abort.abort(new Error('the dispatcher is stopping'));
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Renews the leases of the sends held since the last renewal or longer, in one statement. */
  private async renew(): Promise<void> {
    if (this.renewing || this.byId.size === 0) return;
    const now = Date.now();
    const due = [...this.byId.values()].filter((f) => f.leaseUntil - now < this.o.leaseMs - this.every);
    if (due.length === 0) return;
    this.renewing = true;
    const until = now + this.o.leaseMs;
    try {
      const ids = due.map((f) => f.send.messageId);
      const held = new Set(await renewLeases(this.o.db, this.o.instance, ids, new Date(until).toISOString()));
      for (const f of due) {
        if (held.has(f.send.messageId)) f.leaseUntil = until;
        else {
          // Taken by another instance after it ran out (or finished meanwhile): nothing more to do.
          f.lost = true;
          f.abort.abort(new Error('the lease on this send was lost'));
        }
      }
    } catch (err) {
      this.o.log.warn({ err }, 'channel dispatcher: renewing leases failed');
      // Ended while the lease still covers a send timeout and a renewal period: an SMTP session
      // that transmitted its message waits at most a send timeout more for its answer.
      const left = this.o.sendTimeoutMs + 2 * this.every;
      for (const f of due)
        if (f.leaseUntil - Date.now() < left) f.abort.abort(new Error('the lease could not be renewed'));
    } finally {
      this.renewing = false;
    }
  }
}
