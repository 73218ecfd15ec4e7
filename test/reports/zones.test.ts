// Tests the read of rollup rows (runs of consecutive rows per grain, histograms summed by bin)
// through HTTP on the store under test: durations of two staff members and of nobody, written over
// many transactions (some withdrawn again), read per local hour and day in a zone half an hour off
// UTC, one a quarter of an hour off and one across a DST change, and for one assignee and per
// assignee, must give each bucket and row its exact count and average and the median and p90 their
// bins define (docs/reports.md), as summed here from the facts themselves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { binOf, quantileOfBins } from '../../src/modules/reports/bins.js';
import { addFacts, type Fact, retractFacts } from '../../src/modules/reports/facts.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

// Unaligned ends (facts at the edges are read one by one) around New York's spring change (8 March).
const FROM = Date.parse('2026-02-26T03:07:00Z');
const TO = Date.parse('2026-03-19T17:40:00Z');
const round = (v: number) => Math.round(v * 1000) / 1000;
const iso = (v: number) => new Date(v).toISOString();

/** A repeatable pseudo-random sequence in [0, 1). */
function random(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

interface Figure {
  count: number;
  avgSeconds: number | null;
  medianSeconds: number | null;
  p90Seconds?: number | null;
}

/** What a figure over `values` must read: more than 2,000 durations, so medians come from bins. */
function expected(values: number[]) {
  const bins = new Map<number, number>();
  for (const v of values) bins.set(binOf(v), (bins.get(binOf(v)) ?? 0) + 1);
  const n = values.length;
  return {
    count: n,
    avg: n === 0 ? null : values.reduce((a, b) => a + b, 0) / n,
    median: n === 0 ? null : round(quantileOfBins(bins, 0.5)!),
    p90: n === 0 ? null : round(quantileOfBins(bins, 0.9)!),
  };
}

function check(got: Figure, values: number[], what: string, p90 = false) {
  const want = expected(values);
  assert.equal(got.count, want.count, `${what} count`);
  if (want.avg === null) assert.equal(got.avgSeconds, null, `${what} average`);
  else assert.ok(Math.abs(got.avgSeconds! - want.avg) <= 0.002, `${what} average ${got.avgSeconds} ≠ ${want.avg}`);
  assert.equal(got.medianSeconds, want.median, `${what} median`);
  if (p90) assert.equal(got.p90Seconds, want.p90, `${what} p90`);
}

test('figures of +5:30, +5:45 and DST zones and of one assignee match the facts summed directly', async (t) => {
  const app = await buildTestApp(t);
  const manager = await createStaff(app, 'manager');
  const ana = await createStaff(app, 'staff');
  const rui = await createStaff(app, 'staff');
  const next = random(3545);
  const kept: Fact[] = [];
  const withdrawn: Fact[] = [];
  for (let i = 0; i < 2700; i++) {
    // Moments over the range and an hour beyond each end; durations from a tenth of a second to
    // three days (bins far apart: gaps inside a row's histogram).
    const at = FROM - 3_600_000 + Math.floor(next() * (TO - FROM + 7_200_000));
    const wall = Math.round(Math.exp(Math.log(0.1) + next() * Math.log(2_592_000)) * 1000) / 1000;
    const who = next();
    const f: Fact = {
      metric: 'reply_time',
      at,
      channel: next() < 0.5 ? 'web' : 'whatsapp',
      assignee: who < 0.82 ? ana.id : who < 0.95 ? rui.id : '',
      department: '',
      wall,
      biz: round(wall / 4),
    };
    if (i % 20 === 7) withdrawn.push({ ...f, ref: `gone-${i % 3}` });
    else kept.push(f);
  }
  const all = [...kept, ...withdrawn];
  for (let i = 0; i < all.length; i += 200) {
    await app.ctx.store.transact((tx) => addFacts(tx, all.slice(i, i + 200)));
  }
  // Withdrawn again: their rows are added to and taken from (bins back at 0).
  await app.ctx.store.transact(async (tx) => {
    for (let k = 0; k < 3; k++) await retractFacts(tx, `gone-${k}`, ['reply_time']);
  });

  const inRange = kept.filter((f) => f.at >= FROM && f.at < TO);
  for (const biz of [false, true]) {
    const seconds = (f: Fact) => (biz ? f.biz! : f.wall!);
    const q = `businessHours=${biz}&from=${iso(FROM)}&to=${iso(TO)}`;
    for (const [timezone, granularity] of [
      ['Asia/Kolkata', 'day'],
      ['Asia/Kathmandu', 'day'],
      ['Asia/Kathmandu', 'hour'],
      ['America/New_York', 'day'],
      ['America/New_York', 'hour'],
    ] as const) {
      const res = await call(
        app,
        'GET',
        `/reports/timeseries?metric=reply_time&granularity=${granularity}&timezone=${timezone}&${q}`,
        { token: manager.token },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const buckets = res.data as (Figure & { start: string })[];
      if (granularity === 'hour' && timezone === 'America/New_York') {
        // 2 a.m. never happens on the 8th: 1 a.m. (06:00 UTC) is followed by 3 a.m. (07:00 UTC).
        const starts = buckets.map((b) => b.start);
        const one = starts.indexOf('2026-03-08T06:00:00.000Z');
        assert.equal(starts[one + 1], '2026-03-08T07:00:00.000Z');
      }
      if (timezone === 'Asia/Kathmandu' && granularity === 'day') {
        assert.equal(buckets[1]!.start, '2026-02-26T18:15:00.000Z');
      }
      let total = 0;
      buckets.forEach((b, i) => {
        const a = Date.parse(b.start);
        const z = i + 1 < buckets.length ? Date.parse(buckets[i + 1]!.start) : TO;
        check(
          b,
          kept.filter((f) => f.at >= a && f.at < z).map(seconds),
          `${timezone} ${granularity} ${b.start} ${biz}`,
        );
        total += b.count;
      });
      assert.equal(total, inRange.length);
    }

    const mine = await call(app, 'GET', `/reports/summary?assignee=${ana.id}&${q}`, { token: manager.token });
    assert.equal(mine.status, 200, JSON.stringify(mine.body));
    const anas = inRange.filter((f) => f.assignee === ana.id).map(seconds);
    assert.ok(anas.length > 2000, 'enough durations that the median comes from bins');
    check(mine.data.replyTime, anas, `assignee ${biz}`, true);

    const per = await call(app, 'GET', `/reports/breakdown?by=assignee&${q}`, { token: manager.token });
    assert.equal(per.status, 200, JSON.stringify(per.body));
    const rows = per.data as { key: string | null; replyTime: Figure }[];
    assert.deepEqual(rows.map((r) => r.key).sort(), [ana.id, rui.id, null].sort());
    for (const r of rows) {
      const values = inRange.filter((f) => f.assignee === (r.key ?? '')).map(seconds);
      check(r.replyTime, values, `breakdown ${r.key} ${biz}`, true);
    }
  }
});
