// Owns timing, statement by statement, the SQL the measured read paths send to SQLite: the SQL is
// captured from the project's own query code, then each statement is prepared and run alone.
import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, sql } from 'kysely';
import { executor } from '../src/db/executor.js';
import type { Database } from '../src/db/types.js';
import { listMessages } from '../src/modules/conversations/messages-repository.js';
import { listConversations } from '../src/modules/conversations/repository.js';
import { listGuests } from '../src/modules/guests/repository.js';

export interface StatementCost {
  /** Which request sends it. */
  path: string;
  sql: string;
  /** Compiling the statement, which Kysely's SQLite driver does for every query it runs. */
  prepareUs: number;
  /** Running the already prepared statement and reading its rows. */
  runUs: number;
  rows: number;
  plan: string[];
}

/** Up to 300 calls or half a second, whichever ends first: a full scan of 1M rows takes a while. */
function perCallUs(fn: () => unknown): number {
  fn();
  let calls = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (calls < 300 && (calls < 3 || elapsed < 500)) {
    fn();
    calls++;
    elapsed = performance.now() - t0;
  }
  return (elapsed * 1000) / calls;
}

export async function sqlCosts(file: string, conversationId: string, guestSearch: string): Promise<StatementCost[]> {
  const conn = new SQLite(file, { readonly: true });
  const captured: { path: string; sql: string; params: readonly unknown[] }[] = [];
  let path = '';
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: conn }),
    log: (e) => {
      if (e.level === 'query') captured.push({ path, sql: e.query.sql, params: e.query.parameters });
    },
  });
  try {
    const admin = await db.selectFrom('staff').select('id').where('role', '=', 'admin').executeTakeFirstOrThrow();
    captured.length = 0;

    // The same query src/plugins/gate.ts sends for every authenticated request.
    path = 'every authenticated request (gate)';
    await db
      .selectFrom('staff')
      .select(['id', 'role', 'name', 'email', 'department', 'active', 'tokens_valid_after'])
      .select((eb) =>
        eb
          .exists(eb.selectFrom('revoked_tokens').select(sql.lit(1).as('one')).where('jti', '=', 'no-such-jti'))
          .as('revoked'),
      )
      .where('id', '=', admin.id)
      .executeTakeFirst();
    // Prepared statements run through Kysely here, so its log captures them too.
    const x = executor(db, 'sqlite', async (text, parameters) => {
      return (await db.executeQuery(CompiledQuery.raw(text, [...parameters]))).rows as never[];
    });
    path = 'GET /conversations?status=open&limit=20';
    const now = new Date().toISOString();
    await listConversations(x, { status: 'open', now, today: now.slice(0, 10) }, { page: 1, limit: 20 });
    path = 'GET /conversations/:id/messages';
    await listMessages(x, { conversationId }, { page: 1, limit: 20 });
    path = `GET /guests?search=${guestSearch}`;
    await listGuests(x, { search: guestSearch }, { page: 1, limit: 20 });

    return captured.map((q) => {
      const params = [...q.params];
      const stmt = conn.prepare(q.sql);
      const rows = stmt.reader ? stmt.all(params).length : 0;
      const plan = (conn.prepare(`explain query plan ${q.sql}`).all(params) as { detail: string }[]).map(
        (r) => r.detail,
      );
      return {
        path: q.path,
        sql: q.sql,
        prepareUs: perCallUs(() => conn.prepare(q.sql)),
        runUs: perCallUs(() => stmt.all(params)),
        rows,
        plan,
      };
    });
  } finally {
    await db.destroy();
  }
}

export function formatSqlCosts(costs: StatementCost[]): string {
  const lines = ['\nSQL of the read paths, each statement alone on the seeded file (µs per call):'];
  lines.push(`  ${'prepare'.padStart(8)}${'run'.padStart(8)}${'rows'.padStart(6)}  statement`);
  for (const c of costs) {
    const text = c.sql.length > 110 ? `${c.sql.slice(0, 109)}…` : c.sql;
    lines.push(
      `  ${c.prepareUs.toFixed(0).padStart(8)}${c.runUs.toFixed(0).padStart(8)}${String(c.rows).padStart(6)}  ${text}`,
    );
    lines.push(`  ${''.padStart(22)}  for ${c.path}; plan: ${c.plan.join(' | ')}`);
  }
  return lines.join('\n');
}
