// Tests a PMS-style import as docs/stays.md describes it: with an API key, guests upserted by
// their profile reference, then their stays in bulk by reservation reference (guests named by
// reference too). Run twice, it leaves the same guests and stays, and writes no second event.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff } from '../helpers.js';

const PROFILES = Array.from({ length: 12 }, (_, i) => ({
  ref: `PROF-${1000 + i}`,
  name: `Guest ${i}`,
  email: `guest${i}@pms.example`,
  phone: `+3519100000${String(i).padStart(2, '0')}`,
  attributes: { tier: i % 3 === 0 ? 'gold' : 'silver', nights: i },
}));

const RESERVATIONS = PROFILES.map((p, i) => ({
  externalRef: `RES-${5000 + i}`,
  guestExternalRef: p.ref,
  room: String(100 + i),
  checkIn: `2030-04-${String(1 + i).padStart(2, '0')}`,
  checkOut: `2030-04-${String(3 + i).padStart(2, '0')}`,
  status: i < 4 ? 'in_house' : 'booked',
  adults: 1 + (i % 2),
}));

async function runImport(app: FastifyInstance, key: string, run: number) {
  for (const p of PROFILES) {
    const res = await call(app, 'PUT', `/guests/by-ref/${p.ref}`, {
      token: key,
      body: { name: p.name, email: p.email, phone: p.phone, attributes: p.attributes },
    });
    assert.equal(res.status, run === 1 ? 201 : 200, JSON.stringify(res.body));
  }
  const bulk = await call(app, 'POST', '/stays/bulk', {
    token: key,
    headers: { 'idempotency-key': `nightly-2030-03-31-run-${run}` },
    body: { items: RESERVATIONS },
  });
  assert.equal(bulk.status, 200);
  assert.deepEqual(
    bulk.data.filter((r: { success: boolean }) => !r.success),
    [],
  );
}

/** Everything the import wrote, as the API shows it. */
async function snapshot(app: FastifyInstance, token: string) {
  const guests = await call(app, 'GET', '/guests?limit=100', { token });
  const stays = await call(app, 'GET', '/stays?limit=100', { token });
  const events = await call(app, 'GET', '/events?limit=100', { token });
  return { guests: guests.data, stays: stays.data, events: events.data.length };
}

test('a PMS import of guests and stays by reference, run twice, gives the same result', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'PMS sync', scopes: ['guests:write', 'stays:write'] },
  });
  const key = created.data.key;

  await runImport(app, key, 1);
  const first = await snapshot(app, admin.token);
  assert.equal(first.guests.length, PROFILES.length);
  assert.equal(first.stays.length, RESERVATIONS.length);
  assert.equal(first.events, PROFILES.length * 2, 'a guest.created and a stay.created for each');
  const byRef = new Map(first.guests.map((g: { externalRef: string; id: string }) => [g.externalRef, g.id]));
  for (const s of first.stays) {
    const r = RESERVATIONS.find((x) => x.externalRef === s.externalRef)!;
    assert.equal(s.guestId, byRef.get(r.guestExternalRef));
  }
  // The guests in house show their stay.
  const inHouse = first.guests.find((g: { externalRef: string }) => g.externalRef === 'PROF-1000');
  assert.equal(inHouse.stay.status, 'in_house');
  assert.equal(inHouse.stay.room, '100');

  await runImport(app, key, 2);
  assert.deepEqual(await snapshot(app, admin.token), first);

  // A retried request with the same Idempotency-Key is answered from the first time.
  const replay = await call(app, 'POST', '/stays/bulk', {
    token: key,
    headers: { 'idempotency-key': 'nightly-2030-03-31-run-2' },
    body: { items: RESERVATIONS },
  });
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  // A changed reservation moves only that stay.
  const moved = await call(app, 'PUT', '/stays/by-ref/RES-5005', {
    token: key,
    body: { ...RESERVATIONS[5], externalRef: undefined, room: '501' },
  });
  assert.equal(moved.status, 200);
  const after = await snapshot(app, admin.token);
  assert.equal(after.events, first.events + 1);
  assert.equal(after.stays.filter((s: { room: string }) => s.room === '501').length, 1);
});
