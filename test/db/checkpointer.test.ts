// Tests that the SQLite store checkpoints its WAL off the event loop (src/db/checkpointer.ts): a
// WAL that has grown is copied into the database file by the worker, long before the connection's
// own checkpoint would run in a commit, and closing the store leaves every committed row readable.
// SQLite only: PostgreSQL checkpoints in its own server processes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { openStore } from '../../src/db/store.js';
import { TEST_STORE } from '../helpers.js';

const MiB = 1024 * 1024;

test('a grown WAL is checkpointed by the worker, and a closed store keeps every row', {
  skip: TEST_STORE !== 'sqlite' && 'SQLite only: PostgreSQL checkpoints in its own processes',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gma-checkpoint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'store.db');
  const store = openStore({ kind: 'sqlite', path });
  await sql`create table filler (id integer primary key, body blob not null)`.execute(store.db);
  const rows = 96;
  for (let i = 0; i < rows; i++) {
    await sql`insert into filler (body) values (zeroblob(65536))`.execute(store.db);
  }
  // 6 MiB committed, all of it in the WAL (the connection's own checkpoint waits for ~40 MB): the
  // database file holds only what the worker copied.
  assert.ok(statSync(`${path}-wal`).size > 4 * MiB);
  let copied = false;
  for (let i = 0; i < 150 && !copied; i++) {
    await new Promise((r) => setTimeout(r, 100));
    copied = statSync(path).size > 5 * MiB;
  }
  assert.ok(copied, `the worker copied the WAL into the database file (size ${statSync(path).size})`);

  await store.close();
  const reopened = new SQLite(path, { readonly: true });
  t.after(() => reopened.close());
  assert.equal((reopened.prepare('select count(*) as n from filler').get() as { n: number }).n, rows);
});
