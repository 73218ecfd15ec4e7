// PostgreSQL databases for tests: a migrated template made once per migrations' source, and a pool
// of migrated databases that test processes take in turn and reset to the template's state, so
// that a test pays neither CREATE DATABASE nor DROP DATABASE. A DROP waits for a checkpoint (one to
// several seconds on a busy machine) and each copy of the template gave the next checkpoint its ~300
// files to write and flush: together they were most of the PostgreSQL suite's time. Empty databases
// (for the migrations and for servers a test starts on a store of its own) are still made and
// dropped per test.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { openStore } from '../src/db/store.js';
import { ROOT } from './root.js';

const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Advisory lock keys (two-int form): building a template; holding a pool database. */
const BUILD_LOCK = 20261126;
const POOL_LOCK = 20261128;
/** Bumped when what the template records for the pool changes, so an older template is not used. */
const LAYOUT = 'pool-3';

export const urlOf = (database: string) => {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
};

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** What a freshly migrated database holds, to put a used one back into that state. */
interface Pristine {
  /** Every table, schema-qualified and quoted. */
  tables: string[];
  /** The rows the migrations left, per table (JSON), with the columns to insert. */
  rows: { table: string; columns: string[]; json: string }[];
  /** Each sequence and its last value (null: never used). */
  sequences: { name: string; value: string | null }[];
  /** Bytes on disk. */
  size: number;
  /** A digest of the schema (SHAPE): a test that renamed or altered a table leaves another one. */
  shape: string;
}

/** The schema's objects as a digest: relations and their columns, constraints, triggers, functions. */
const SHAPE = `select md5(coalesce(string_agg(x, ',' order by x), '')) as shape from (
    select c.relkind::text || ':' || c.relname || ':' || coalesce((select string_agg(a.attname || ' ' ||
        format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text, ',' order by a.attnum)
      from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), '') as x
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast') and c.relkind <> 't'
    union all
    select 'k:' || conname || ':' || conrelid::regclass::text || ':' || pg_get_constraintdef(oid) from pg_constraint
     where connamespace not in ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    union all
    select 't:' || tgname || ':' || tgrelid::regclass::text || ':' || tgenabled::text from pg_trigger where not tgisinternal
    union all
    select 'f:' || p.proname || ':' || md5(p.prosrc) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname not in ('pg_catalog', 'information_schema')
  ) s`;

async function snapshot(c: pg.Client): Promise<Pristine> {
  const tables = (
    await c.query<{ t: string }>(
      `select format('%I.%I', schemaname, tablename) as t from pg_tables
        where schemaname not in ('pg_catalog', 'information_schema') order by 1`,
    )
  ).rows.map((r) => r.t);
  const rows: Pristine['rows'] = [];
  for (const table of tables) {
    const columns = (
      await c.query<{ c: string }>(
        `select quote_ident(attname) as c from pg_attribute
          where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = ''
          order by attnum`,
        [table],
      )
    ).rows.map((r) => r.c);
    const found = await c.query<{ j: string | null }>(
      `select json_agg(x)::text as j from (select ${columns.join(', ')} from ${table}) x`,
    );
    const json = found.rows[0]?.j ?? null;
    if (json !== null) rows.push({ table, columns, json });
  }
  const sequences = (
    await c.query<{ name: string; value: string | null }>(
      `select format('%I.%I', schemaname, sequencename) as name, last_value::text as value from pg_sequences`,
    )
  ).rows;
  const size = Number(
    (await c.query<{ n: string }>('select pg_database_size(current_database()) as n')).rows[0]?.n ?? 0,
  );
  const shape = (await c.query<{ shape: string }>(SHAPE)).rows[0]!.shape;
  return { tables, rows, sequences, size, shape };
}

/**
 * The migrated template: named after the migrations' source, made once by whichever test process
 * gets there first (the others wait on an advisory lock), renamed into place only once complete.
 * Its comment holds its Pristine state. Nobody stays connected to it, which CREATE DATABASE …
 * TEMPLATE requires.
 */
let template: Promise<{ name: string; pristine: Pristine }> | undefined;
export function migratedTemplate(): Promise<{ name: string; pristine: Pristine }> {
  template ??= (async () => {
    const dir = join(ROOT, 'src/db');
    const digest = createHash('sha256').update(LAYOUT);
    for (const file of [
      'migrate.ts',
      ...readdirSync(join(dir, 'migrations'))
        .sort()
        .map((f) => `migrations/${f}`),
    ]) {
      digest.update(file).update(readFileSync(join(dir, file)));
    }
    const name = `gma_template_${digest.digest('hex').slice(0, 16)}`;
    return withClient(PG_ADMIN_URL, async (admin) => {
      await admin.query('select pg_advisory_lock($1, 0)', [BUILD_LOCK]);
      try {
        const read = () =>
          admin.query<{ note: string | null }>(
            `select shobj_description(oid, 'pg_database') as note from pg_database where datname = $1`,
            [name],
          );
        let found = await read();
        if (found.rowCount === 0) {
          const building = `${name}_building_${randomBytes(4).toString('hex')}`;
          await admin.query(`create database ${building}`);
          try {
            const store = openStore({ kind: 'postgres', url: urlOf(building) });
            try {
              await migrate(store);
            } finally {
              await store.close();
            }
            const pristine = await withClient(urlOf(building), snapshot);
            await admin.query(`comment on database ${building} is ${admin.escapeLiteral(JSON.stringify(pristine))}`);
            await admin.query(`alter database ${building} rename to ${name}`);
          } catch (error) {
            await admin.query(`drop database if exists ${building} with (force)`);
            throw error;
          }
          await dropStalePools(admin, name);
          found = await read();
        }
        return { name, pristine: JSON.parse(found.rows[0]?.note ?? 'null') as Pristine };
      } finally {
        await admin.query('select pg_advisory_unlock($1, 0)', [BUILD_LOCK]).catch(() => {});
      }
    });
  })();
  return template;
}

const poolPrefix = (templateName: string) => templateName.replace(/^gma_template_/, 'gma_pool_');

/** Pool databases of other templates (an older migration set) that no process holds. */
async function dropStalePools(admin: pg.Client, templateName: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(
    `select datname from pg_database where datname like 'gma\\_pool\\_%' and datname not like $1`,
    [`${poolPrefix(templateName)}\\_%`],
  );
  for (const { datname } of rows) {
    const key = [POOL_LOCK, await hashOf(admin, datname)];
    const { rows: got } = await admin.query<{ ok: boolean }>('select pg_try_advisory_lock($1, $2) as ok', key);
    if (!got[0]?.ok) continue;
    try {
      await admin.query(`drop database if exists ${datname} with (force)`);
    } finally {
      await admin.query('select pg_advisory_unlock($1, $2)', key);
    }
  }
}

const hashOf = async (c: pg.Client, name: string) =>
  (await c.query<{ h: number }>('select hashtext($1) as h', [name])).rows[0]!.h;

/**
 * The session that holds this process's pool locks: a pool database is this process's while the
 * lock is held, and free again when the process ends, however it ends. Closed after the file's tests.
 */
let holder: Promise<pg.Client> | undefined;
after(async () => {
  if (holder !== undefined) await (await holder).end();
});
const lockHolder = () => {
  holder ??= (async () => {
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    return c;
  })();
  return holder;
};

/** Pool databases this process holds that no test of it is using. */
const idle: string[] = [];

async function takeFromPool(templateName: string): Promise<string> {
  const kept = idle.pop();
  if (kept !== undefined) return kept;
  const c = await lockHolder();
  for (let n = 0; ; n++) {
    const name = `${poolPrefix(templateName)}_${n}`;
    const { rows } = await c.query<{ ok: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as ok', [
      POOL_LOCK,
      name,
    ]);
    if (!rows[0]?.ok) continue;
    const exists = await c.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await c.query(`create database ${name} template ${templateName}`);
    return name;
  }
}

/**
 * Puts a pool database back into the template's state: no other session, every table as migrated;
 * made again from the template if a test changed its schema (a table renamed to fake an outage).
 */
async function reset(name: string, templateName: string, p: Pristine): Promise<void> {
  const reshaped = await withClient(urlOf(name), async (c) => {
    // A server a test killed, or an app left open, may still be connected (and writing).
    await c.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`,
    );
    if ((await c.query<{ shape: string }>(SHAPE)).rows[0]?.shape !== p.shape) return true;
    // DELETE, not TRUNCATE: a truncate gives every table and index a new file (slower here than
    // copying the template), and a test leaves a few rows. Replica mode skips the tables' triggers
    // and foreign-key checks, as every table is emptied.
    await c.query(
      `begin; set local session_replication_role = replica; ${p.tables.map((t) => `delete from ${t};`).join(' ')}`,
    );
    for (const r of p.rows) {
      const cols = r.columns.join(', ');
      await c.query(
        `insert into ${r.table} (${cols}) overriding system value
           select ${cols} from json_populate_recordset(null::${r.table}, $1::json)`,
        [r.json],
      );
    }
    for (const s of p.sequences) {
      if (s.value === null) await c.query(`alter sequence ${s.name} restart`);
      else await c.query('select setval($1, $2::bigint, true)', [s.name, s.value]);
    }
    await c.query('commit');
    // The deleted rows stay as dead tuples (this server may run without autovacuum): once they
    // double the database, a plain VACUUM frees them and gives the emptied pages back.
    const { rows } = await c.query<{ n: string }>('select pg_database_size(current_database()) as n');
    if (Number(rows[0]?.n ?? 0) > 2 * p.size) await c.query('vacuum');
    return false;
  });
  if (reshaped) {
    await withClient(PG_ADMIN_URL, async (admin) => {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.query(`create database ${name} template ${templateName}`);
    });
  }
}

/**
 * A PostgreSQL database for one test: empty, made now and dropped when the test ends; or
 * (`migrated`) as the app would leave a fresh one after its start-up migrations, taken from the
 * pool and given back when the test ends. `pooled: false` makes a new copy of the template instead,
 * for a test that reads the planner's choices: a pool database holds the same rows as a new one,
 * but its tables keep the pages earlier tests filled, and the planner sizes tables by their pages.
 */
export async function freshPostgres(t: TestContext, o: { migrated?: boolean; pooled?: boolean } = {}): Promise<string> {
  if (o.migrated && o.pooled !== false) {
    const { name: templateName, pristine } = await migratedTemplate();
    const name = await takeFromPool(templateName);
    await reset(name, templateName, pristine);
    // After the hooks registered before this one (the app using it closes first).
    t.after(() => {
      idle.push(name);
    });
    return urlOf(name);
  }
  const name = `gma_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const from = o.migrated ? ` template ${(await migratedTemplate()).name}` : '';
  await withClient(PG_ADMIN_URL, (admin) => admin.query(`create database ${name}${from}`));
  t.after(() => withClient(PG_ADMIN_URL, (c) => c.query(`drop database if exists ${name} with (force)`)));
  return urlOf(name);
}
