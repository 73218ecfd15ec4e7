// Owns the jobs table's statements: write a job in the caller's transaction (one live job per kind
// and key: a second write reschedules it), cancel by key, lease due jobs to one instance (PostgreSQL
// FOR UPDATE SKIP LOCKED; SQLite's one writer runs the statement alone), and record a run's end
// only under the lease it was claimed with.
import { sql } from 'kysely';
import { chosenOnce, nowIso, toIso } from '../../db/store.js';
import type { Executor } from '../../db/types.js';

export interface NewJob {
  kind: string;
  /** Any JSON value, handed to the handler as it was written. */
  payload?: unknown;
  /** When it is due; now when left out. */
  runAt?: Date | string;
  /** One live job per kind and key: writing another reschedules it (its payload and time replaced). */
  key?: string | null;
}

export interface ClaimedJob {
  id: string;
  bucket: string;
  kind: string;
  key: string | null;
  payload: unknown;
  /** Runs counted so far, this one included. */
  attempts: number;
  version: number;
  runAt: string;
}

const LIVE = sql<boolean>`status = 'pending'`;
/**
 * The same test where a job is named by id: written so no partial index of pending jobs matches it.
 * With statistics that take the table for empty (taken before a burst), the planner read every
 * pending job through such an index rather than the few named through the primary key.
 */
const LIVE_BY_ID = sql<boolean>`(status || '') = 'pending'`;
/** The predicate of jobs_live_key (migration 036), written as a literal so SQLite matches it to the index. */
const KEYED = sql<boolean>`status = 'pending' and key is not null`;

/** Writes (or, by key, reschedules) a job; returns its id. */
export async function insertJob(db: Executor, job: NewJob): Promise<string> {
  const now = nowIso();
  const runAt = job.runAt === undefined ? now : new Date(job.runAt).toISOString();
  const payload = JSON.stringify(job.payload ?? null);
  const row = await db
    .insertInto('jobs')
    .values({
      kind: job.kind,
      key: job.key ?? null,
      payload,
      status: 'pending',
      run_at: runAt,
      attempts: 0,
      version: 0,
      created_at: now,
      updated_at: now,
    })
    // The partial unique index of keyed live jobs.
    .onConflict((oc) =>
      oc
        .columns(['kind', 'key'])
        .where(KEYED)
        .doUpdateSet((eb) => ({
          payload,
          run_at: runAt,
          attempts: 0,
          version: eb('jobs.version', '+', 1),
          last_error: null,
          updated_at: now,
        })),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  return String(row.id);
}

/** Cancels the live job of `kind` and `key`; false when there is none. */
export async function cancelJob(db: Executor, kind: string, key: string): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('jobs')
    .set({ status: 'cancelled', finished_at: now, updated_at: now, locked_by: null, locked_until: null })
    .where('kind', '=', kind)
    .where('key', '=', key)
    .where(LIVE)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The live job of `kind` and `key`: when it is due and how often it ran. */
export async function findLiveJob(db: Executor, kind: string, key: string) {
  const row = await db
    .selectFrom('jobs')
    .select(['id', 'run_at', 'attempts', 'locked_by'])
    .where('kind', '=', kind)
    .where('key', '=', key)
    .where(LIVE)
    .executeTakeFirst();
  return (
    row && { id: String(row.id), runAt: toIso(row.run_at), attempts: Number(row.attempts), lockedBy: row.locked_by }
  );
}

/** Pending, due, and not held by a live lease. */
function due(db: Executor, kinds: readonly string[], at: string) {
  return db
    .selectFrom('jobs')
    .where(LIVE)
    .where('kind', 'in', kinds)
    .where('run_at', '<=', at)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', at)]));
}

/**
 * Leases up to `limit` due jobs of `kind` to `instance` until `until`, counting a run for each: an
 * instance that dies mid-run uses up the job's attempts like any failure.
 */
export async function claimJobs(
  db: Executor,
  instance: string,
  kind: string,
  limit: number,
  until: number,
): Promise<ClaimedJob[]> {
  const at = nowIso();
  // A read first: most looks find nothing due, and on SQLite an UPDATE takes the write lock even
  // when it changes no row. In due order, as the claim: the first entry of jobs_kind_due answers,
  // where a bitmap of every pending job of the kind looked as cheap to a planner that takes the
  // table for empty.
  const any = await due(db, [kind], at).select('id').orderBy('run_at').orderBy('id').limit(1).executeTakeFirst();
  if (any === undefined) return [];
  let candidates = due(db, [kind], at).select('id').orderBy('run_at').orderBy('id').limit(limit);
  if (db.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  const rows = await db
    .updateTable('jobs')
    .set((eb) => ({
      locked_by: instance,
      locked_until: new Date(until).toISOString(),
      attempts: eb('attempts', '+', 1),
      updated_at: at,
    }))
    .where(chosenOnce(db, 'id', candidates))
    .returning(['id', 'kind', 'key', 'payload', 'attempts', 'version', 'run_at'])
    .execute();
  return rows.map((r) => ({
    id: String(r.id),
    bucket: r.kind,
    kind: r.kind,
    key: r.key,
    payload: JSON.parse(r.payload) as unknown,
    attempts: Number(r.attempts),
    version: Number(r.version),
    runAt: toIso(r.run_at),
  }));
}

/** When the earliest unheld pending job of `kinds` is due (ms), or null. */
export async function nextJobDueAt(db: Executor, kinds: readonly string[]): Promise<number | null> {
  if (kinds.length === 0) return null;
  const at = nowIso();
  // Kind by kind, each the first of its kind in jobs_kind_due (migration 036): one ordered walk over
  // every kind would need an index of every kind's jobs by due time.
  const firsts = kinds.map(
    (kind) =>
      sql`select (${db
        .selectFrom('jobs')
        .select('run_at')
        .where(LIVE)
        .where('kind', '=', kind)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', at)]))
        .orderBy('run_at')
        .orderBy('id')
        .limit(1)}) as at`,
  );
  const { rows } = await sql<{ at: string | Date | null }>`select min(f.at) as at
    from (${sql.join(firsts, sql` union all `)}) as f`.execute(db);
  const first = rows[0]?.at;
  return first == null ? null : new Date(toIso(first)).getTime();
}

type Held = { id: string; instance: string; version: number };

/** Marks a job done under its run's lease (the version it was claimed at); false when not held. */
export async function completeJob(db: Executor, h: Held): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('jobs')
    .set({ status: 'done', finished_at: now, updated_at: now, locked_by: null, locked_until: null })
    .where('id', '=', Number(h.id))
    .where('locked_by', '=', h.instance)
    .where('version', '=', h.version)
    .where(LIVE_BY_ID)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Marks several jobs done under their runs' leases in one statement; returns the ids recorded (the
 * others are no longer held as claimed: cancelled, rescheduled or taken over).
 */
export async function completeJobs(db: Executor, instance: string, jobs: readonly Omit<Held, 'instance'>[]) {
  if (jobs.length === 0) return new Set<string>();
  const now = nowIso();
  const rows = await db
    .updateTable('jobs')
    .set({ status: 'done', finished_at: now, updated_at: now, locked_by: null, locked_until: null })
    .where(
      'id',
      'in',
      jobs.map((j) => Number(j.id)),
    )
    .where((eb) => eb.or(jobs.map((j) => eb.and([eb('id', '=', Number(j.id)), eb('version', '=', j.version)]))))
    .where('locked_by', '=', instance)
    .where(LIVE_BY_ID)
    .returning('id')
    .execute();
  return new Set(rows.map((r) => String(r.id)));
}

/** A failed run: due again at `retryAt`, or (null) failed for good. False when not held. */
export async function recordJobFailure(db: Executor, h: Held, retryAt: string | null, error: string): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('jobs')
    .set(
      retryAt === null
        ? {
            status: 'failed',
            finished_at: now,
            last_error: error,
            updated_at: now,
            locked_by: null,
            locked_until: null,
          }
        : { run_at: retryAt, last_error: error, updated_at: now, locked_by: null, locked_until: null },
    )
    .where('id', '=', Number(h.id))
    .where('locked_by', '=', h.instance)
    .where('version', '=', h.version)
    .where(LIVE_BY_ID)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Hands this instance's leases back so any instance claims the jobs at once. `uncounted`: the run
 * never started its work (stopping), so its attempt does not count.
 */
export async function releaseJobs(db: Executor, instance: string, ids: string[], uncounted: boolean): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('jobs')
    .set(() => ({
      locked_by: null,
      locked_until: null,
      ...(uncounted ? { attempts: sql<number>`case when attempts > 0 then attempts - 1 else 0 end` } : {}),
    }))
    .where('locked_by', '=', instance)
    .where('id', 'in', ids.map(Number))
    .execute();
}

/** Extends this instance's leases; returns the ids it still holds. */
export async function renewJobs(db: Executor, instance: string, ids: string[], until: number): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable('jobs')
    .set({ locked_until: new Date(until).toISOString() })
    .where('locked_by', '=', instance)
    .where('id', 'in', ids.map(Number))
    .where(LIVE_BY_ID)
    .returning('id')
    .execute();
  return rows.map((r) => String(r.id));
}

/** Deletes jobs that finished (done, failed or cancelled) before `before`. */
export async function purgeJobs(db: Executor, before: string): Promise<number> {
  const r = await db
    .deleteFrom('jobs')
    .where('status', '<>', 'pending')
    .where('finished_at', '<', before)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Pending jobs per kind, and how long the oldest due one has waited (s): for the metrics. */
export async function jobsWaiting(db: Executor): Promise<Map<string, { waiting: number; lagSeconds: number }>> {
  const at = nowIso();
  const rows = await db
    .selectFrom('jobs')
    .where(LIVE)
    .select((eb) => ['kind', eb.fn.countAll<number | string>().as('n'), eb.fn.min('run_at').as('first')])
    .groupBy('kind')
    .execute();
  const now = new Date(at).getTime();
  return new Map(
    rows.map((r) => [
      r.kind,
      {
        waiting: Number(r.n),
        lagSeconds: r.first == null ? 0 : Math.max(0, (now - new Date(toIso(r.first)).getTime()) / 1000),
      },
    ]),
  );
}
