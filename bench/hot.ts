// Owns the "hot" conversation the depth figures page through: one conversation holding N messages
// (a long-running group booking, a bot loop), added to a seeded store after the seed command,
// which spreads messages thinly. Found again by its subject, so a store kept between runs gets it once.
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { newId } from '../src/lib/ids.js';

export const HOT_SUBJECT = 'Benchmark: one conversation with many messages';

interface HotRow {
  id: string;
  conversation_id: string;
  created_at: string;
}

/** N messages one second apart, ending now, ids in creation order as the API makes them. */
function rows(conversationId: string, n: number): HotRow[] {
  const end = Date.now();
  return Array.from({ length: n }, (_, i) => ({
    id: newId('msg'),
    conversation_id: conversationId,
    created_at: new Date(end - (n - i) * 1000).toISOString(),
  }));
}

async function sqliteHot(file: string, n: number): Promise<string> {
  const db = new SQLite(file);
  try {
    db.pragma('busy_timeout = 10000');
    const found = db.prepare('select id from conversations where subject = ?').get(HOT_SUBJECT) as
      | { id: string }
      | undefined;
    if (found) return found.id;
    const conv = db.prepare('select id from conversations order by id limit 1').get() as { id: string };
    const insert = db.prepare(
      `insert into messages (id, conversation_id, direction, type, content, sender_type, sender_id, delivery_status, created_at)
       values (?, ?, 'inbound', 'text', ?, 'guest', null, 'received', ?)`,
    );
    const all = rows(conv.id, n);
    db.transaction(() => {
      all.forEach(
        (r, i) => void insert.run(r.id, r.conversation_id, `Message ${i + 1} of a long thread`, r.created_at),
      );
      db.prepare(
        'update conversations set subject = ?, message_count = message_count + ?, last_message_at = ? where id = ?',
      ).run(HOT_SUBJECT, n, all.at(-1)!.created_at, conv.id);
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    return conv.id;
  } finally {
    db.close();
  }
}

async function postgresHot(url: string, n: number): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query<{ id: string }>('select id from conversations where subject = $1 limit 1', [
      HOT_SUBJECT,
    ]);
    if (found.rows[0]) return found.rows[0].id;
    const conv = (await client.query<{ id: string }>('select id from conversations order by id limit 1')).rows[0]!;
    const all = rows(conv.id, n);
    await client.query('begin');
    for (let i = 0; i < all.length; i += 10_000) {
      const part = all.slice(i, i + 10_000);
      await client.query(
        `insert into messages (id, conversation_id, direction, type, content, sender_type, sender_id, delivery_status, created_at)
         select id, $2, 'inbound', 'text', 'Message ' || (ord + $4) || ' of a long thread', 'guest', null, 'received', at
         from unnest($1::text[], $3::timestamptz[]) with ordinality as t(id, at, ord)`,
        [part.map((r) => r.id), conv.id, part.map((r) => r.created_at), i],
      );
    }
    await client.query(
      'update conversations set subject = $1, message_count = message_count + $2, last_message_at = $3 where id = $4',
      [HOT_SUBJECT, n, all.at(-1)!.created_at, conv.id],
    );
    await client.query('commit');
    await client.query('vacuum analyze messages');
    return conv.id;
  } finally {
    await client.end();
  }
}

/** The id of the store's hot conversation, made with `n` messages if it is not there yet. */
export function ensureHotConversation(databaseUrl: string, n: number): Promise<string> {
  if (databaseUrl.startsWith('sqlite:')) return sqliteHot(databaseUrl.slice('sqlite:'.length), n);
  return postgresHot(databaseUrl, n);
}
