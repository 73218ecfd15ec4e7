// Owns the live side of the event feed in one instance: while any stream is open, one poller reads
// the events table after the last id it saw (the store is shared, so this sees every instance's
// events) and hands each new event to every open stream. Commits wake it at once.
import type { FastifyBaseLogger } from 'fastify';
import type { Executor } from '../../db/types.js';
import { PollLoop } from './poll-loop.js';
import { type EventListRow, listEvents, maxEventId } from './repository.js';

export interface Subscriber {
  /**
   * The new events of one read of the table, in id order; the subscriber applies its own filters.
   * Every subscriber is handed the same array, so what it derives from a batch can be shared.
   */
  push(rows: readonly EventListRow[]): void;
  /** The hub is shutting down: end the stream. */
  close(): void;
}

const BATCH = 500;

export class EventHub {
  private readonly subs = new Set<Subscriber>();
  private readonly loop: PollLoop;
  private cursor = 0;
  private starting: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly db: Executor,
    pollMs: number,
    log: FastifyBaseLogger,
  ) {
    this.loop = new PollLoop(
      () => this.step(),
      pollMs,
      (err) => log.warn({ err }, 'event stream poll failed'),
    );
  }

  get size(): number {
    return this.subs.size;
  }

  /**
   * Adds a stream. Resolves once the poller is running, so every event after that moment reaches
   * it; the stream reads what came before from the table itself.
   */
  async add(sub: Subscriber): Promise<void> {
    // A stream still opening when the hub closed (its request passed the gate before close began)
    // is ended at once: added, it would restart the poller and hold the server open for good.
    if (this.closed) {
      sub.close();
      return;
    }
    this.subs.add(sub);
    if (!this.loop.running) {
      this.starting ??= (async () => {
        this.cursor = await maxEventId(this.db);
        this.loop.start();
      })().finally(() => {
        this.starting = null;
      });
    }
    await this.starting;
  }

  remove(sub: Subscriber): void {
    this.subs.delete(sub);
    // Nobody listening: no reason to poll. The next stream restarts from the newest id.
    if (this.subs.size === 0) void this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /** Ends every open stream; clients reopen as they would after any end (new streams still start). */
  endAll(): void {
    for (const s of [...this.subs]) s.close();
    this.subs.clear();
  }

  /** Ends every stream (so the server can close), refuses later ones, and stops polling. */
  async close(): Promise<void> {
    this.closed = true;
    this.endAll();
    await this.loop.stop();
  }

  private async step(): Promise<undefined> {
    for (;;) {
      const rows = await listEvents(this.db, { after: this.cursor, limit: BATCH });
      for (const row of rows) this.cursor = Math.max(this.cursor, Number(row.id));
      // A batch, not row by row: when the streams fall behind (a busy process reads several events
      // at once), each stream gets them in one write, so a backlog costs fewer writes, not more.
      if (rows.length > 0) for (const s of this.subs) s.push(rows);
      if (rows.length < BATCH) return undefined;
    }
  }
}
