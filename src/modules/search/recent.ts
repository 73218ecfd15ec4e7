// Owns the recent index of message search on PostgreSQL (docs/search.md, "The recent index"): a
// partial GIN index over the newest messages only, `messages_search_recent_<ulid>`, covering the
// messages whose id is at least `msg_<ulid>` (ids are ULIDs: later ids sort after). A search reads
// its newest matches from it first and the full index only for what it lacks (repository.ts): the
// GIN index hands over every match of the words before any is fetched and sorted, so its cost
// follows how many match in the whole store, and on the recent index only those of the newest
// messages. The index's name is its cutoff, so the catalog alone says which one is in use.
//
// Maintenance, from every instance (one at a time, under an advisory lock): when more than twice
// SEARCH_RECENT_MESSAGES messages lie past the cutoff (or, with none yet, in the store), a new
// index is built CONCURRENTLY (writes go on) from the SEARCH_RECENT_MESSAGES-th newest message; an
// instance drops the older ones at its next run after it first saw the newer one, so every instance
// has moved to the newer cutoff (it re-reads the catalog every CUTOFF_TTL_MS) before the old index
// goes. A build that fails leaves an invalid index, dropped at the next run. A search made with a
// cutoff whose index is gone is still right: the index only makes it cheaper.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { sql } from 'kysely';
import type { Store } from '../../db/store.js';
import type { Db } from '../../db/types.js';

const PREFIX = 'messages_search_recent_';
const NAME = /^messages_search_recent_([0-9a-z]{26})$/;
const MESSAGE_ID = /^msg_([0-9a-z]{26})$/;
/** The advisory lock one instance's maintenance holds (any constant unique to this use). */
const LOCK_KEY = 720_391_044_151;
/** How long an instance uses the cutoff it read from the catalog. */
const CUTOFF_TTL_MS = 30_000;
/** The first maintenance after start, then every MAINTAIN_EVERY_MS. */
const FIRST_RUN_MS = 60_000;
const MAINTAIN_EVERY_MS = 600_000;

interface IndexRow {
  name: string;
  valid: boolean;
}

/** What a maintenance run did (for its log line and tests). */
export interface Maintained {
  built: string | null;
  dropped: string[];
  /** The cutoff (a message id) in use after the run, or null. */
  cutoff: string | null;
}

export class RecentSearchIndex {
  private cutoff: string | null = null;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<string | null> | null = null;
  /** The newest index this instance saw at its previous run: older ones may go once it is seen twice. */
  private seenNewest: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<Maintained> | null = null;
  /** The maintenance connection's server process while a run holds the lock (to cancel a build). */
  private backendPid: number | null = null;

  constructor(
    private readonly store: Store,
    /** SEARCH_RECENT_MESSAGES: 0 turns the index off (and drops it at the next run). */
    private readonly size: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Whether this store has a recent index at all (PostgreSQL). */
  get applies(): boolean {
    return this.store.dialect === 'postgres';
  }

  /** The cutoff (a message id) of the recent index in use, or null: read from the catalog, kept a while. */
  async current(): Promise<string | null> {
    if (!this.applies || this.size === 0) return null;
    if (performance.now() - this.readAt < CUTOFF_TTL_MS) return this.cutoff;
    this.reading ??= this.readCutoff().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async readCutoff(): Promise<string | null> {
    try {
      this.cutoff = newestCutoff(await recentIndexes(this.store.db));
    } catch (err) {
      // A search without the cutoff is right, only slower: it must not fail for want of it.
      this.log.warn({ err }, 'search: could not read the recent index; searching the whole index');
      this.cutoff = null;
    }
    this.readAt = performance.now();
    return this.cutoff;
  }

  /** Starts the periodic maintenance (PostgreSQL only). */
  start(): void {
    if (!this.applies) return;
    const tick = () => {
      this.maintain().catch((err: unknown) => this.log.warn({ err }, 'search: recent index maintenance failed'));
    };
    const again = () => {
      tick();
      this.timer = setTimeout(again, MAINTAIN_EVERY_MS);
      this.timer.unref();
    };
    this.timer = setTimeout(again, FIRST_RUN_MS);
    this.timer.unref();
  }

  /**
   * Stops the maintenance. A build in progress is cancelled rather than waited for (on a large
   * store it takes minutes, and a stopping instance must not): its invalid index is dropped by the
   * next run, on any instance.
   */
  async stop(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const running = this.running;
    if (running === null) return;
    if (this.backendPid !== null) {
      await sql`select pg_cancel_backend(${this.backendPid})`.execute(this.store.db).catch(() => {});
    }
    await running.catch(() => {});
  }

  /** One maintenance run now (one at a time in this instance; across instances, under the lock). */
  maintain(): Promise<Maintained> {
    if (!this.applies) return Promise.resolve({ built: null, dropped: [], cutoff: null });
    this.running ??= this.store
      .maintenance((db) => db.connection().execute((conn) => this.locked(conn)))
      .finally(() => {
        this.running = null;
        // This instance's next search reads the catalog again.
        this.readAt = Number.NEGATIVE_INFINITY;
      });
    return this.running;
  }

  private async locked(db: Db): Promise<Maintained> {
    const none: Maintained = { built: null, dropped: [], cutoff: null };
    const lock = await sql<{ ok: boolean; pid: number }>`
      select pg_try_advisory_lock(${LOCK_KEY}) as ok, pg_backend_pid() as pid`.execute(db);
    if (lock.rows[0]?.ok !== true) return none;
    this.backendPid = lock.rows[0].pid;
    try {
      return await this.run(db);
    } finally {
      this.backendPid = null;
      await sql`select pg_advisory_unlock(${LOCK_KEY})`.execute(db);
    }
  }

  private async run(db: Db): Promise<Maintained> {
    const rows = await recentIndexes(db);
    const dropped: string[] = [];
    const drop = async (name: string) => {
      // The name comes from the catalog and matched NAME: no quoting can be needed.
      await sql.raw(`drop index concurrently if exists ${name}`).execute(db);
      dropped.push(name);
    };
    // A build that failed (or was cut short) left its index invalid: it is of no use and slows writes.
    for (const r of rows) if (!r.valid && NAME.test(r.name)) await drop(r.name);
    const valid = rows
      .filter((r) => r.valid && NAME.test(r.name))
      .map((r) => r.name)
      .sort()
      .reverse();
    if (this.size === 0) {
      for (const name of valid) await drop(name);
      return { built: null, dropped, cutoff: null };
    }
    let newest = valid[0] ?? null;
    const cutoff = newest === null ? '' : cutoffOf(newest);
    const past = await sql<{ n: string | number }>`
      select count(*) as n from (select 1 from messages where id >= ${cutoff} limit ${2 * this.size + 1}) s`.execute(
      db,
    );
    let built: string | null = null;
    if (Number(past.rows[0]?.n ?? 0) > 2 * this.size) {
      const from = await sql<{ id: string }>`
        select id from messages order by id desc offset ${this.size - 1} limit 1`.execute(db);
      const id = from.rows[0]?.id;
      const ulid = id === undefined ? null : (MESSAGE_ID.exec(id)?.[1] ?? null);
      if (ulid === null) {
        this.log.warn({ id }, 'search: a message id is not a ULID; the recent index is not built');
      } else {
        const name = `${PREFIX}${ulid}`;
        // The id matched MESSAGE_ID (letters, digits, one underscore): a safe literal.
        await sql
          .raw(
            `create index concurrently if not exists ${name} on messages using gin (search, assignee, channel) where id >= 'msg_${ulid}'`,
          )
          .execute(db);
        built = name;
        newest = name;
        this.log.info({ index: name }, 'search: built a recent index');
      }
    }
    // Older indexes go once this instance saw the newest at an earlier run (the others then use it).
    if (built === null && newest !== null && this.seenNewest === newest) {
      for (const name of valid) if (name !== newest) await drop(name);
    }
    this.seenNewest = newest;
    return { built, dropped, cutoff: newest === null ? null : cutoffOf(newest) };
  }
}

/** The recent indexes on messages, as the catalog has them (a build in progress is not valid). */
async function recentIndexes(db: Db): Promise<IndexRow[]> {
  const { rows } = await sql<IndexRow>`
    select c.relname as name, i.indisvalid and i.indisready as valid
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where i.indrelid = 'messages'::regclass and c.relname like ${`${PREFIX}%`}`.execute(db);
  return rows;
}

/** The cutoff of the newest valid recent index among `rows`, or null. */
function newestCutoff(rows: IndexRow[]): string | null {
  const names = rows.filter((r) => r.valid && NAME.test(r.name)).map((r) => r.name);
  if (names.length === 0) return null;
  return cutoffOf(names.sort().at(-1)!);
}

const cutoffOf = (name: string): string => `msg_${name.slice(PREFIX.length)}`;

declare module 'fastify' {
  interface FastifyInstance {
    /** The recent index of message search (PostgreSQL; does nothing on SQLite). */
    recentSearch: RecentSearchIndex;
  }
}

/** Makes the instance's RecentSearchIndex and runs its maintenance while the app lives. */
export const recentSearchRuntime = fp(
  async function recentSearchRuntime(app: FastifyInstance) {
    const index = new RecentSearchIndex(app.ctx.store, app.ctx.config.searchRecentMessages, app.log);
    app.decorate('recentSearch', index);
    // Started once the app is ready: a test's app closed at once never starts it.
    app.addHook('onReady', async () => index.start());
    app.addHook('onClose', async () => index.stop());
  },
  { name: 'recent-search' },
);
