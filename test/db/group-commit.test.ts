// Tests the write path under concurrency, on whichever store is under test (on SQLite concurrent
// writes share one durable commit, src/db/group-commit.ts): every acknowledged write is stored
// with its events, a refused one leaves nothing behind, and one that fails after writing is
// undone alone while the others that committed with it stand.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { Tx } from '../../src/db/types.js';
import { newId } from '../../src/lib/ids.js';
import { addFacts, type Fact } from '../../src/modules/reports/facts.js';
import { buildTestApp, call, createStaff, TEST_STORE } from '../helpers.js';

/** A guest row written straight to the store: no addresses, no tags. */
function guestRow(name: string, at: string) {
  return {
    id: newId('gst'),
    name,
    search_text: name.toLowerCase(),
    email: null,
    email_lower: null,
    phone: null,
    tags: '[]',
    notes: null,
    created_at: at,
    updated_at: at,
  };
}

test('concurrent message posts, some refused: each acknowledged one is stored once, with its event', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const admin = await createStaff(app, 'admin');
  const guest = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Concurrent', phone: '+15550100003' },
  });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'sms' },
  });
  const missing = 'cnv_01m00000000000000000000000';
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      call(app, 'POST', `/conversations/${i % 4 === 3 ? missing : cnv.data.id}/messages`, {
        token: admin.token,
        body: { content: `message ${i}` },
      }),
    ),
  );
  const ok = results.filter((r) => r.status === 201);
  assert.equal(ok.length, 45);
  assert.ok(results.every((r) => r.status === 201 || r.status === 404));

  const list = await call(app, 'GET', `/conversations/${cnv.data.id}/messages?limit=100`, { token: admin.token });
  assert.equal(list.body.meta.total, 45);
  assert.deepEqual(list.data.map((m: { id: string }) => m.id).sort(), ok.map((r) => r.data.id).sort());
  const after = await call(app, 'GET', `/conversations/${cnv.data.id}`, { token: admin.token });
  assert.equal(after.data.messageCount, 45);
  const feed = await call(app, 'GET', '/events?types=message.created&limit=100', { token: admin.token });
  assert.deepEqual(feed.data.map((e: { data: { id: string } }) => e.data.id).sort(), ok.map((r) => r.data.id).sort());
  const ids = feed.data.map((e: { id: string }) => Number(e.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'the feed is in id order',
  );
});

test('a transaction that fails after writing is undone alone; the ones committed with it stand', async (t) => {
  const app = await buildTestApp(t);
  const store = app.ctx.store;
  // onCommit listeners: called for each committed transaction, never for one rolled back.
  const told: string[] = [];
  const at = new Date().toISOString();
  const guest = (name: string) => guestRow(name, at);
  const good = Array.from({ length: 10 }, (_, i) => guest(`Kept ${i}`));
  const bad = Array.from({ length: 5 }, (_, i) => guest(`Undone ${i}`));
  const outcomes = await Promise.allSettled([
    ...good.map((g) =>
      store.transact(async (tx) => {
        await tx.insertInto('guests').values(g).execute();
        tx.onCommit(() => told.push(g.id));
        return g.id;
      }),
    ),
    ...bad.map((g) =>
      store.transact(async (tx) => {
        await tx.insertInto('guests').values(g).execute();
        tx.onCommit(() => told.push(g.id));
        throw new Error(`refused ${g.name}`);
      }),
    ),
  ]);
  assert.deepEqual(
    outcomes.slice(0, 10).map((o) => o.status),
    Array(10).fill('fulfilled'),
  );
  for (const [i, o] of outcomes.slice(10).entries()) {
    assert.equal(o.status, 'rejected');
    assert.equal((o as PromiseRejectedResult).reason.message, `refused Undone ${i}`);
  }
  assert.deepEqual(told.sort(), good.map((g) => g.id).sort());
  const names = (await store.selectFrom('guests').select('name').execute()).map((r) => r.name).sort();
  assert.deepEqual(names, good.map((g) => g.name).sort());
  // The store is usable afterwards, in and out of a transaction.
  assert.equal(await store.transact(async (tx) => (await tx.selectFrom('guests').select('id').execute()).length), 10);
});

test('report figures written by concurrent transactions: those that stand count, those undone do not', async (t) => {
  // On SQLite the rollups of one group commit are summed and written once, after its last
  // transaction; on PostgreSQL each transaction's are sent with its COMMIT (Tx.addAtCommit).
  const app = await buildTestApp(t);
  const manager = await createStaff(app, 'manager');
  const agent = await createStaff(app, 'staff');
  const store = app.ctx.store;
  const hour = Date.parse('2026-03-02T10:00:00Z');
  const fact = (i: number, wall: number): Fact => ({
    metric: 'reply_time',
    at: hour + i * 1000,
    channel: i % 3 === 0 ? 'sms' : 'web',
    assignee: i % 2 === 0 ? agent.id : '',
    department: '',
    wall,
    biz: wall,
  });
  // Two facts per transaction (added in two calls, as a reply adds them), so each transaction's own
  // rollup rows already hold sums before the commit adds them up.
  const outcomes = await Promise.allSettled(
    Array.from({ length: 40 }, (_, i) =>
      store.transact(async (tx) => {
        await addFacts(tx, [fact(i, 2 + i)]);
        await addFacts(tx, [fact(i, 300 + i * 7)]);
        if (i % 5 === 4) throw new Error(`undone ${i}`);
        return i;
      }),
    ),
  );
  assert.equal(outcomes.filter((o) => o.status === 'rejected').length, 8);
  const kept = Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 5 !== 4);
  const q = `from=${new Date(hour).toISOString()}&to=${new Date(hour + 3_600_000).toISOString()}&businessHours=false`;
  const median = (v: number[]) => {
    const s = [...v].sort((a, b) => a - b);
    return (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  for (const [filter, picked] of [
    ['', kept],
    ['&channel=sms', kept.filter((i) => i % 3 === 0)],
    [`&assignee=${agent.id}`, kept.filter((i) => i % 2 === 0)],
  ] as const) {
    const res = await call(app, 'GET', `/reports/summary?${q}${filter}`, { token: manager.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const walls = picked.flatMap((i) => [2 + i, 300 + i * 7]);
    assert.equal(res.data.replyTime.count, walls.length, `count${filter}`);
    const average = walls.reduce((a, b) => a + b, 0) / walls.length;
    assert.equal(res.data.replyTime.avgSeconds, Math.round(average * 1000) / 1000, `average${filter}`);
    assert.equal(res.data.replyTime.medianSeconds, median(walls), `median${filter}`);
  }
});

test('PostgreSQL: a transaction chosen to end a deadlock runs again and commits', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite writes one transaction at a time: no deadlock');
  const app = await buildTestApp(t);
  const store = app.ctx.store;
  const at = new Date().toISOString();
  const ids = [newId('gst'), newId('gst')] as const;
  for (const [i, id] of ids.entries()) {
    await store
      .insertInto('guests')
      .values({ ...guestRow(`Locked ${i}`, at), id })
      .execute();
  }
  const touch = (tx: Tx, id: string, note: string) =>
    tx.executeQuery(CompiledQuery.raw('update guests set notes = $1 where id = $2', [note, id]));
  // Each transaction locks one guest, waits until the other holds its own, then asks for it: one
  // of the two is aborted by PostgreSQL's deadlock check, and only a second run can commit it.
  let ready = 0;
  let bothHold: () => void = () => {};
  const barrier = new Promise<void>((r) => {
    bothHold = r;
  });
  const runs = [0, 0];
  const crosswise = (me: 0 | 1) =>
    store.transact(async (tx) => {
      runs[me]!++;
      await touch(tx, ids[me], `first by ${me}`);
      if (runs[me] === 1 && ++ready === 2) bothHold();
      if (runs[me] === 1) await barrier;
      await touch(tx, ids[1 - me]!, `second by ${me}`);
      return me;
    });
  assert.deepEqual(await Promise.all([crosswise(0), crosswise(1)]), [0, 1]);
  assert.deepEqual([...runs].sort(), [1, 2], 'the aborted one ran again, the other once');
  const notes = await store.selectFrom('guests').select(['id', 'notes']).where('id', 'in', ids).execute();
  // Whichever committed last wrote both rows.
  assert.equal(new Set(notes.map((n) => n.notes?.slice(-1))).size, 1);
});
