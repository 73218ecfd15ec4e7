// Tests journey steps run several to a transaction (docs/stays.md, At scale): the steps one claim
// leased commit together, and a step that throws takes none of the others with it. A trigger in the
// store makes one guest's message fail mid-step (after its conversation was written); the others of
// its batch are each done once and share their events' commit, the failing one leaves nothing
// behind, is retried, and once the store takes its message again it is done once too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { until } from './jobs-helpers.js';

const DAY = 86_400_000;
const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
type Json = Record<string, any>;

test('a step that throws in a batch rolls back alone: the others commit once, it is retried', async (t) => {
  // Polled by several reads at a time until the steps ran: above the per-staff request limit.
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '100000' });
  const { token } = await createStaff(app, 'admin');
  const ok = (res: { status: number; body: unknown }, status = 200) =>
    assert.equal(res.status, status, JSON.stringify(res.body));
  // Arrival an hour ago: a step at arrival is due at once, not too late.
  const hourAgo = Date.now() - 3_600_000;
  ok(
    await call(app, 'PUT', '/settings/hotel', {
      token,
      body: {
        value: {
          name: 'Casa Azul',
          timezone: 'UTC',
          locale: 'en',
          checkInTime: new Date(hourAgo).toISOString().slice(11, 16),
          checkOutTime: '11:00',
        },
      },
    }),
  );
  const names = ['Ana Lima', 'Boom Guest', 'Carla Dias', 'Duarte Reis', 'Eva Sousa', 'Filipe Neto'];
  const stays: { name: string; guestId: string; stayId: string }[] = [];
  for (const [i, name] of names.entries()) {
    const guest = await call(app, 'POST', '/guests', { token, body: { name, phone: `+35191000000${i}` } });
    ok(guest, 201);
    const stay = await call(app, 'POST', '/stays', {
      token,
      body: { guestId: guest.data.id, room: `10${i}`, checkIn: dayOf(hourAgo), checkOut: dayOf(hourAgo + 2 * DAY) },
    });
    ok(stay, 201);
    stays.push({ name, guestId: guest.data.id, stayId: stay.data.id });
  }

  // The store refuses the one guest's message, after its step opened a conversation for it.
  const db = app.ctx.store.db;
  if (app.ctx.store.dialect === 'postgres') {
    await sql`create function boom() returns trigger language plpgsql as $$
      begin if new.content like 'Welcome Boom%' then raise exception 'boom: refused by the test'; end if; return new; end $$`.execute(
      db,
    );
    await sql`create trigger boom before insert on messages for each row execute function boom()`.execute(db);
  } else {
    await sql`create trigger boom before insert on messages when new.content like 'Welcome Boom%'
      begin select raise(abort, 'boom: refused by the test'); end`.execute(db);
  }

  // Saving the journey plans every stay in one transaction: their steps are due together, and
  // one claim leases them all.
  ok(
    await call(app, 'PUT', '/settings/journeys', {
      token,
      body: {
        value: [
          {
            name: 'welcome',
            when: { event: 'arrival' },
            channel: 'sms',
            action: { type: 'message', content: 'Welcome {{guest.firstName}} to room {{stay.room}}' },
          },
        ],
      },
    }),
  );
  const step = async (stayId: string): Promise<Json> => {
    const res = await call(app, 'GET', `/stays/${stayId}/journey`, { token });
    ok(res);
    return res.data.find((s: Json) => s.journey === 'welcome');
  };
  const boom = stays[1]!;
  const others = stays.filter((s) => s !== boom);
  await until(
    async () => (await Promise.all(others.map((s) => step(s.stayId)))).every((s) => s?.status === 'done'),
    8000,
    'the other steps to run',
  );
  // The failing step ran and threw (its job holds the error and is due again); nothing of it stayed.
  await until(
    async () =>
      (
        await db
          .selectFrom('jobs')
          .select('last_error')
          .where('kind', '=', 'journey.step')
          .where('key', '=', `${boom.stayId}:welcome`)
          .executeTakeFirst()
      )?.last_error?.includes('boom') === true,
    8000,
    'the failing step to be recorded',
  );
  assert.equal((await step(boom.stayId)).status, 'scheduled');
  const conversationsOf = async (guestId: string) => {
    const res = await call(app, 'GET', '/conversations?limit=100', { token });
    ok(res);
    return (res.data as Json[]).filter((c) => c.guest.id === guestId);
  };
  assert.deepEqual(await conversationsOf(boom.guestId), [], 'the failed step left its conversation behind');

  // The others: each once, and in one commit (their events share the transaction's time).
  const done = async () => {
    const res = await call(app, 'GET', '/events?types=journey.step_done&limit=100', { token });
    ok(res);
    return res.data as Json[];
  };
  const first = await done();
  assert.deepEqual(first.map((e) => e.data.stayId).sort(), others.map((s) => s.stayId).sort());
  assert.equal(new Set(first.map((e) => e.occurredAt)).size, 1, 'the steps of one claim did not share a commit');
  for (const s of others) {
    const convs = await conversationsOf(s.guestId);
    assert.equal(convs.length, 1);
    assert.equal(convs[0]!.messageCount, 1);
  }

  // The store takes the message again: the retry sends it, once.
  await sql`drop trigger boom${sql.raw(app.ctx.store.dialect === 'postgres' ? ' on messages' : '')}`.execute(db);
  await until(async () => (await step(boom.stayId)).status === 'done', 15_000, 'the retried step to run');
  const convs = await conversationsOf(boom.guestId);
  assert.equal(convs.length, 1);
  assert.equal(convs[0]!.messageCount, 1);
  const all = await done();
  assert.equal(all.length, stays.length);
  assert.equal(all.filter((e) => e.data.stayId === boom.stayId).length, 1);
});
