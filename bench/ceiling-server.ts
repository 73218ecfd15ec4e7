// Owns the ceiling: a bare Fastify server answering GET / with {"ok":true}, run as its own process
// so the API's req/s can be read as a share of what Fastify itself does on this machine.
//
// `GET /spin?us=N&bytes=B` is the realistic mix's twin (bench/twin.ts): it holds the event loop for
// N µs, as a request that costs that much would, then answers B bytes of JSON.
//
// Given FLOOR_SQLITE (a seeded SQLite file) or FLOOR_PG (a seeded PostgreSQL database's URL) it
// also answers the conversation list the leanest way this stack allows, the floor of the list's
// cost: `GET /floor?status=S&limit=N` runs the API's own first-page statement (read from its
// checked-in SQL, src/db/queries/<dialect>/conversations.sql), which has the store write each row's
// JSON (its current stay and SLA view included), and answers those rows joined in the envelope,
// with no authentication, hooks, cursor or schema. On SQLite `GET /floor-json` answers a leaner
// page still: eleven of the columns (no stay, SLA, labels), SQLite writing each row's JSON.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('PORT is required\n');
  process.exit(1);
}

const app = Fastify({ logger: false });
app.get('/', async () => ({ ok: true }));
// The bench waits on /healthz for a server to be idle before a scenario (bench/client.ts, settle).
app.get('/healthz', async () => ({ ok: true }));

/** Answers of each size the twin asked for, built once: the twin's cost is the wait it is told. */
const padded = new Map<number, string>();
app.get<{ Querystring: { us?: string; bytes?: string } }>('/spin', async (req, reply) => {
  const until = performance.now() + Number(req.query.us ?? 0) / 1000;
  // Busy, not asleep: the loop is held, as a request's own work holds it.
  while (performance.now() < until);
  const bytes = Math.max(20, Math.min(1 << 20, Number(req.query.bytes ?? 20) || 20));
  let body = padded.get(bytes);
  if (body === undefined) {
    body = `{"ok":true,"pad":"${'x'.repeat(bytes - 20)}"}`;
    padded.set(bytes, body);
  }
  reply.type('application/json; charset=utf-8');
  return body;
});

/** The API's first-page statement of the conversation list filtered by status, as checked in. */
function firstPageSql(dialect: 'sqlite' | 'postgres'): string {
  const file = new URL(`../src/db/queries/${dialect}/conversations.sql`, import.meta.url);
  const lines = readFileSync(file, 'utf8').split('\n');
  const text = lines[lines.indexOf('-- {"status":"open"}: first') + 1];
  if (text === undefined || !text.includes('select')) throw new Error(`floor: no first-page statement in ${file}`);
  return text.replace(/;$/, '');
}

type Query = { status?: string; limit?: string };
const meta = (limit: number, total: number) => ({ limit, page: 1, total, pages: Math.ceil(total / limit) });
/** The page's answer from the statement's rows: each row's JSON first, the list's total last. */
const answer = (rows: unknown[][], limit: number) =>
  `{"success":true,"data":[${rows.map((r) => r[0]).join(',')}],"meta":${JSON.stringify(
    meta(limit, Number(rows[0]?.[rows[0].length - 1] ?? 0)),
  )}}`;
/** The statement's inputs in their order: the hotel's today (UTC here) and now for the SLA view. */
const inputs = (dialect: 'sqlite' | 'postgres', status: string, limit: number) => {
  const now = new Date().toISOString();
  const today = now.slice(0, 10);
  return dialect === 'sqlite'
    ? [status, today, now, now, now, now, status, limit, 0, 0]
    : [today, now, now, now, now, status, status, limit, 0];
};
/** Fails at start when the statement's placeholders are not the inputs above. */
function checkInputs(text: string, dialect: 'sqlite' | 'postgres'): void {
  const n = dialect === 'sqlite' ? (text.match(/\?/g) ?? []).length : new Set(text.match(/\$\d+/g) ?? []).size;
  const want = inputs(dialect, 'open', 20).length;
  if (n !== want) throw new Error(`floor: the ${dialect} first-page statement takes ${n} inputs, not ${want}`);
}

const floorFile = process.env.FLOOR_SQLITE;
if (floorFile) {
  // Loaded only for a floor run, so the bare ceiling's process is what it always was.
  const { default: SQLite } = await import('better-sqlite3');
  const db = new SQLite(floorFile, { readonly: true });
  const text = firstPageSql('sqlite');
  checkInputs(text, 'sqlite');
  const rowsOf = db.prepare(text).raw(true);
  // The same page, each row's JSON written by SQLite; its total read as the statement above does.
  const jsonOf = db
    .prepare(
      `select json_object('id', c.id, 'guestId', c.guest_id, 'guest', json_object('id', c.guest_id, 'name', g.name),
        'channel', c.channel, 'status', c.status, 'assignee', c.assignee, 'subject', c.subject,
        'lastMessageAt', c.last_message_at, 'messageCount', c.message_count, 'createdAt', c.created_at,
        'updatedAt', c.updated_at)
      from conversations c join guests g on g.id = c.guest_id where c.status = ?
      order by c.last_message_at desc, c.id desc limit ?`,
    )
    .pluck(true);
  const totalOf = db.prepare('select coalesce(sum(n), 0) from conversation_counts where status = ?').pluck(true);
  app.get<{ Querystring: Query }>('/floor', async (req, reply) => {
    const status = req.query.status ?? 'open';
    const limit = Number(req.query.limit ?? 20);
    const rows = rowsOf.all(inputs('sqlite', status, limit)) as unknown[][];
    reply.type('application/json; charset=utf-8');
    return answer(rows, limit);
  });
  app.get<{ Querystring: Query }>('/floor-json', async (req, reply) => {
    const status = req.query.status ?? 'open';
    const limit = Number(req.query.limit ?? 20);
    const rows = jsonOf.all(status, limit) as string[];
    const total = Number(totalOf.get(status));
    reply.type('application/json; charset=utf-8');
    return `{"success":true,"data":[${rows.join(',')}],"meta":${JSON.stringify(meta(limit, total))}}`;
  });
}

const floorPg = process.env.FLOOR_PG;
if (floorPg) {
  const { default: pg } = await import('pg');
  const { pgTimestamptz } = await import('../src/db/store.js');
  // The API's pool size and the API's timestamp text; rows as arrays, a named (prepared) statement.
  const types = {
    getTypeParser: ((oid: number, format?: string) =>
      oid === 1184 ? pgTimestamptz : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({ connectionString: floorPg, max: 10, types });
  const text = firstPageSql('postgres');
  checkInputs(text, 'postgres');
  app.get<{ Querystring: Query }>('/floor', async (req, reply) => {
    const status = req.query.status ?? 'open';
    const limit = Number(req.query.limit ?? 20);
    const { rows } = await pool.query<unknown[]>({
      name: 'floor',
      text,
      values: inputs('postgres', status, limit),
      rowMode: 'array',
    });
    reply.type('application/json; charset=utf-8');
    return answer(rows, limit);
  });
}

const stop = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

await app.listen({ host: '127.0.0.1', port });
