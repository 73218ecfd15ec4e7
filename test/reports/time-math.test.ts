// Tests the pure arithmetic reports stand on: business seconds and targets in a time zone (DST
// included), the histogram's precision, rollup pieces summing exactly to a range, local buckets,
// and the order of SLA moments.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { binOf, binValue, quantileOfBins } from '../../src/modules/reports/bins.js';
import { bucketsOf } from '../../src/modules/reports/buckets.js';
import { addBusinessSeconds, businessSecondsBetween } from '../../src/modules/reports/business-time.js';
import { cover } from '../../src/modules/reports/cover.js';
import { GRAINS } from '../../src/modules/reports/facts.js';
import { nextConversationMoments, slaStatus } from '../../src/modules/reports/sla.js';

const weekdays = [
  { open: '09:00', close: '12:30' },
  { open: '13:30', close: '18:00' },
];
const ZONES = ['Europe/Lisbon', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'UTC'];
const hoursIn = (timezone: string) => ({
  timezone,
  days: {
    mon: weekdays,
    tue: weekdays,
    wed: weekdays,
    thu: weekdays,
    fri: weekdays,
    sat: [{ open: '10:00', close: '24:00' }],
  },
});
const instant = fc.integer({ min: Date.parse('2026-01-01T00:00:00Z'), max: Date.parse('2027-12-31T00:00:00Z') });

test('business seconds add up over any split, never exceed wall time, and adding them lands back', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...ZONES),
      instant,
      fc.integer({ min: 0, max: 20 * 86_400_000 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (tz, a, len, cut) => {
        const h = hoursIn(tz);
        const b = a + len;
        const mid = a + Math.floor(len * cut);
        const whole = businessSecondsBetween(h, a, b);
        assert.ok(Math.abs(whole - (businessSecondsBetween(h, a, mid) + businessSecondsBetween(h, mid, b))) < 1e-6);
        assert.ok(whole <= len / 1000 + 1e-6);
        if (whole > 0) {
          const back = addBusinessSeconds(h, a, whole)!;
          assert.ok(back <= b, `${tz} ${new Date(a).toISOString()} +${whole}s`);
          assert.ok(Math.abs(businessSecondsBetween(h, a, back) - whole) < 1e-6);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('a day across the spring DST change holds one hour less of business time only when open then', () => {
  const allDay = { timezone: 'Europe/Lisbon', days: { sun: [{ open: '00:00', close: '24:00' }] } };
  // 2026-03-29 is a Sunday: Lisbon jumps from 01:00 to 02:00.
  const from = Date.parse('2026-03-29T00:00:00Z');
  const to = Date.parse('2026-03-29T23:00:00Z');
  assert.equal(businessSecondsBetween(allDay, from, to), 23 * 3600);
});

test('a duration read back from its bin is within 1 s or 5 %', () => {
  fc.assert(
    fc.property(fc.double({ min: 0, max: 400 * 86_400, noNaN: true }), (v) => {
      assert.ok(Math.abs(binValue(binOf(v)) - v) <= Math.max(1, 0.05 * v), String(v));
    }),
  );
  assert.ok(Math.abs(quantileOfBins(new Map([[binOf(100), 3]]), 0.5)! - 100) <= 5);
});

test('rollup pieces and edges count exactly the facts of any range', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 120 * 86_400_000 }), { maxLength: 60 }),
      fc.integer({ min: 0, max: 60 * 86_400_000 }),
      fc.integer({ min: 1, max: 60 * 86_400_000 }),
      (facts, from, len) => {
        const to = from + len;
        const c = cover(from, to);
        let n = 0;
        for (const p of c.pieces) {
          assert.ok((GRAINS as readonly number[]).includes(p.grain));
          n += p.sign * facts.filter((f) => Math.floor(f / 1000 / p.grain) * p.grain === p.start).length;
        }
        for (const [a, b] of c.raw) n += facts.filter((f) => f >= a && f < b).length;
        assert.equal(n, facts.filter((f) => f >= from && f < to).length);
      },
    ),
  );
  // A local day at UTC+1 is a day less an hour plus an hour, not 24 hours.
  assert.equal(cover(Date.parse('2026-06-01T23:00:00Z'), Date.parse('2026-06-02T23:00:00Z')).pieces.length, 3);
});

test('local days follow DST, weeks start on Monday, and too many buckets are refused', () => {
  const days = bucketsOf(
    Date.parse('2026-03-28T00:00:00Z'),
    Date.parse('2026-03-31T00:00:00Z'),
    'day',
    'Europe/Lisbon',
    100,
  )!;
  assert.deepEqual(
    days.map(([a, b]) => [new Date(a).toISOString(), (b - a) / 3_600_000]),
    [
      ['2026-03-28T00:00:00.000Z', 24],
      ['2026-03-29T00:00:00.000Z', 23],
      ['2026-03-29T23:00:00.000Z', 24],
      // Cut to `to`: the last local day has begun an hour before it.
      ['2026-03-30T23:00:00.000Z', 1],
    ],
  );
  const weeks = bucketsOf(Date.parse('2026-11-25T12:00:00Z'), Date.parse('2026-12-10T00:00:00Z'), 'week', 'UTC', 100)!;
  assert.deepEqual(
    weeks.map(([a]) => new Date(a).toISOString()),
    ['2026-11-25T12:00:00.000Z', '2026-11-30T00:00:00.000Z', '2026-12-07T00:00:00.000Z'],
  );
  const kathmandu = bucketsOf(
    Date.parse('2026-06-01T00:00:00Z'),
    Date.parse('2026-06-01T03:00:00Z'),
    'hour',
    'Asia/Kathmandu',
    10,
  )!;
  assert.deepEqual(
    kathmandu.map(([a]) => new Date(a).toISOString().slice(11, 16)),
    ['00:00', '00:15', '01:15', '02:15'],
  );
  assert.equal(bucketsOf(0, 2000 * 3_600_000, 'hour', 'UTC', 1000), null);
});

test('SLA moments come in time order, at_risk before breached, and the status follows them', () => {
  const s = {
    responseTarget: 'first_response' as const,
    responseDue: 10_000,
    responseRisk: 8_000,
    resolutionDue: 50_000,
    resolutionRisk: 40_000,
    breached: false,
  };
  assert.deepEqual(
    nextConversationMoments(s, 9_000).map((m) => [m.kind, m.target, m.at]),
    [
      ['sla.breached', 'first_response', 10_000],
      ['sla.at_risk', 'resolution', 40_000],
      ['sla.breached', 'resolution', 50_000],
    ],
  );
  assert.equal(slaStatus(s, 7_999), 'ok');
  assert.equal(slaStatus(s, 8_000), 'at_risk');
  assert.equal(slaStatus(s, 10_000), 'breached');
  assert.equal(slaStatus({ ...s, responseDue: null, responseRisk: null, breached: true }, 0), 'breached');
});
