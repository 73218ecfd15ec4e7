// Tests the guest search against its definition, on whichever store is under test: for every term
// (long ones served by the trigram index of migration 004, short ones and ones holding LIKE's
// wildcards served by a scan), the API returns exactly the guests whose name, e-mail or phone
// contains it in any case, with the right total, before and after names, e-mails and phones change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff } from '../helpers.js';

interface G {
  id: string;
  name: string;
  email: string | null;
  phone: string | null;
}

const FIRST = ['Ana', 'Björn', 'Chloé', 'Dário', 'Émile', 'Fatima', 'Grace', 'Hiro', 'Iñès', 'Jon'];
const ASCII = ['ana', 'bjorn', 'chloe', 'dario', 'emile', 'fatima', 'grace', 'hiro', 'ines', 'jon'];
const LAST = ['Souza', 'Okafor', 'Lefèvre', 'Park', 'Nguyen', 'Müller', 'Silva', 'O’Brien', 'Kim', 'Rossi'];

function expected(guests: G[], term: string): string[] {
  const t = term.toLowerCase();
  return guests
    .filter((g) => [g.name, g.email, g.phone].some((v) => v?.toLowerCase().includes(t)))
    .map((g) => g.id)
    .sort();
}

async function search(app: FastifyInstance, token: string, term: string) {
  const res = await call(app, 'GET', `/guests?limit=100&search=${encodeURIComponent(term)}`, { token });
  assert.equal(res.status, 200, `${term}: ${res.raw.body}`);
  return { ids: res.data.map((g: { id: string }) => g.id).sort(), total: res.body.meta.total as number };
}

const TERMS = [
  'sou',
  'souza',
  'PARK',
  'lefèvre',
  'ÉMILE',
  'müll',
  'o’b',
  'iñès',
  '@hotel',
  'mail.test',
  '+4477',
  '0001',
  'an',
  'k',
  'a_b',
  '50%',
  'x\\y',
  'nothing-like-this',
  'on o',
];

test('search returns exactly the guests containing the term, through creates and edits', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10000', RATE_LIMIT_BULK: '1000' });
  const admin = await createStaff(app, 'admin');
  const guests: G[] = [];
  for (let i = 0; i < 60; i++) {
    const name = `${FIRST[i % 10]} ${LAST[(i * 3) % 10]}`;
    const body = {
      name,
      email: i % 4 === 0 ? null : `${ASCII[i % 10]}${i}@mail.test`,
      phone: i % 3 === 0 ? null : `+4477${String(i).padStart(8, '0')}`,
      ...(i === 7 && { name: 'Ana a_b 50% Souza' }),
      ...(i === 8 && { name: 'x\\y Literal' }),
    };
    const res = await call(app, 'POST', '/guests', { token: admin.token, body });
    assert.equal(res.status, 201, res.raw.body);
    guests.push({ id: res.data.id, name: res.data.name, email: res.data.email, phone: res.data.phone });
  }
  const check = async (when: string) => {
    for (const term of TERMS) {
      const got = await search(app, admin.token, term);
      const want = expected(guests, term);
      assert.deepEqual(got.ids, want, `${when}: "${term}"`);
      assert.equal(got.total, want.length, `${when}: total for "${term}"`);
    }
  };
  await check('after creating');

  // Change names, e-mails and phones, clear some; the index follows each change.
  for (const [i, g] of guests.entries()) {
    if (i % 5 !== 0) continue;
    const changes = {
      name: `Renamed ${LAST[(i + 1) % 10]} Souzaki`,
      email: i % 10 === 0 ? null : `changed${i}@hotel.test`,
      phone: i % 15 === 0 ? `+4477999${i}` : g.phone,
    };
    const res = await call(app, 'PATCH', `/guests/${g.id}`, { token: admin.token, body: changes });
    assert.equal(res.status, 200, res.raw.body);
    Object.assign(g, { name: res.data.name, email: res.data.email, phone: res.data.phone });
  }
  await check('after editing');
  assert.ok(expected(guests, 'souza').length > 6, 'the edits are visible to the search');
});

test('a term or a tag on more than 1,000 guests pages newest first with the right total, like a rare one', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10000', RATE_LIMIT_BULK: '1000' });
  const admin = await createStaff(app, 'admin');
  const made: { id: string; createdAt: string }[] = [];
  for (let b = 0; b < 11; b++) {
    const items = Array.from({ length: 100 }, (_, i) => ({
      name: b * 100 + i < 1030 ? `Li Zhangsson ${b * 100 + i}` : `Ola Nordmann ${b * 100 + i}`,
      // A tag on more than 1,000 guests (read newest first) and one on a few (read by its ids).
      tags: b * 100 + i < 1050 ? ['regular'] : ['rare'],
    }));
    const res = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: { items } });
    assert.equal(res.status, 200, res.raw.body);
    for (const r of res.data) made.push({ id: r.data.id, createdAt: r.data.createdAt });
  }
  const common = made.slice(0, 1030);
  const newestFirst = [...common].sort((a, b) =>
    a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
  );
  const byNewest = (xs: typeof made) =>
    [...xs].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));
  for (const [term, want] of [
    ['search=zhangsson', newestFirst],
    ['search=ZHANG', newestFirst],
    ['search=nordmann', [...made.slice(1030)].reverse()],
    ['tag=regular', byNewest(made.slice(0, 1050))],
    ['tag=rare', byNewest(made.slice(1050))],
  ] as const) {
    for (const page of [1, 2, 52]) {
      const res = await call(app, 'GET', `/guests?${term}&limit=20&page=${page}`, { token: admin.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.meta.total, want.length, term);
      assert.deepEqual(
        res.data.map((g: { id: string }) => g.id),
        want.slice((page - 1) * 20, page * 20).map((g) => g.id),
        `${term} page ${page}`,
      );
    }
  }
});
