// Owns following the texts a write scenario queued: the message POST answers once the text is
// stored, and the channel dispatcher sends it afterwards. A scenario's POST rate alone would hide a
// dispatcher falling behind, so after such a scenario the bench reads how many sends are still
// pending and waits for them to be sent before the next scenario (which they would slow).
import SQLite from 'better-sqlite3';
import pg from 'pg';

const PENDING = "select count(*) as n from channel_sends where status = 'pending'";

async function pendingSends(databaseUrl: string): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new SQLite(databaseUrl.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    try {
      return Number((db.prepare(PENDING).get() as { n: number }).n);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(PENDING)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

export interface SendsBacklog {
  /** Sends still pending when the scenario's load stopped. */
  left: number;
  /** Seconds until none was pending (null: still some after `maxS`). */
  drainS: number | null;
}

/** The sends left pending now, and how long the dispatcher takes to send them (polled every 250 ms). */
export async function sendsBacklog(databaseUrl: string, maxS = 180): Promise<SendsBacklog> {
  const t0 = performance.now();
  const left = await pendingSends(databaseUrl);
  let n = left;
  while (n > 0) {
    if (performance.now() - t0 > maxS * 1000) return { left, drainS: null };
    await new Promise((r) => setTimeout(r, 250));
    n = await pendingSends(databaseUrl);
  }
  return { left, drainS: (performance.now() - t0) / 1000 };
}
