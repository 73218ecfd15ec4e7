// Tests the histograms rollup rows hold (migration 033) through HTTP on the store under test: more
// durations than are ever read one by one, written over many transactions and read back per local
// hour and day in a zone half an hour off UTC, must give each bucket its exact count and average
// and the median and p90 its bins define, within 1 s or 5 % of the exact one (docs/reports.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { binOf, quantileOfBins, quantileOfSorted } from '../../src/modules/reports/bins.js';
import { addFacts, type Fact } from '../../src/modules/reports/facts.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

const FROM = Date.parse('2026-03-01T00:07:00Z');
const TO = Date.parse('2026-03-04T18:40:00Z');
const round = (v: number) => Math.round(v * 1000) / 1000;

/** A repeatable pseudo-random sequence in [0, 1). */
function random(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

test('histograms in the rollup rows give every bucket of a +5:30 zone its figures', async (t) => {
  const app = await buildTestApp(t);
  const manager = await createStaff(app, 'manager');
  const next = random(35);
  const facts: Fact[] = [];
  for (let i = 0; i < 2400; i++) {
    // Moments over the range and a little beyond it; durations from under a second to two days.
    const at = FROM - 3_600_000 + Math.floor(next() * (TO - FROM + 7_200_000));
    const wall = Math.round(Math.exp(next() * Math.log(172_800)) * 1000) / 1000;
    facts.push({
      metric: 'reply_time',
      at,
      channel: next() < 0.5 ? 'web' : 'sms',
      assignee: '',
      department: '',
      wall,
      biz: round(wall / 3),
    });
  }
  for (let i = 0; i < facts.length; i += 150) {
    await app.ctx.store.transact((tx) => addFacts(tx, facts.slice(i, i + 150)));
  }

  const expect = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const bins = new Map<number, number>();
    for (const v of values) bins.set(binOf(v), (bins.get(binOf(v)) ?? 0) + 1);
    return {
      count: values.length,
      avg: values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length,
      median: values.length === 0 ? null : round(quantileOfBins(bins, 0.5)!),
      p90: values.length === 0 ? null : round(quantileOfBins(bins, 0.9)!),
      exactMedian: quantileOfSorted(sorted, 0.5),
    };
  };
  const near = (got: number | null, want: number | null, what: string) => {
    if (want === null) return assert.equal(got, null, what);
    assert.ok(got !== null && Math.abs(got - want) <= 0.002, `${what}: ${got} ≠ ${want}`);
  };
  const iso = (v: number) => new Date(v).toISOString();

  for (const biz of [false, true]) {
    const seconds = (f: Fact) => (biz ? f.biz! : f.wall!);
    for (const granularity of ['hour', 'day']) {
      const res = await call(
        app,
        'GET',
        `/reports/timeseries?metric=reply_time&granularity=${granularity}&timezone=Asia/Kolkata&businessHours=${biz}&from=${iso(FROM)}&to=${iso(TO)}`,
        { token: manager.token },
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const buckets = res.data as {
        start: string;
        count: number;
        avgSeconds: number | null;
        medianSeconds: number | null;
      }[];
      if (granularity === 'hour') {
        // Local hours of India begin at half past the UTC hour.
        assert.equal(buckets[1]!.start, '2026-03-01T00:30:00.000Z');
      } else assert.equal(buckets[1]!.start, '2026-03-01T18:30:00.000Z');
      let total = 0;
      buckets.forEach((b, i) => {
        const a = Date.parse(b.start);
        const z = i + 1 < buckets.length ? Date.parse(buckets[i + 1]!.start) : TO;
        const want = expect(facts.filter((f) => f.at >= a && f.at < z).map(seconds));
        const what = `${granularity} ${b.start} businessHours=${biz}`;
        assert.equal(b.count, want.count, what);
        near(b.avgSeconds, want.avg, `${what} average`);
        assert.equal(b.medianSeconds, want.median, `${what} median`);
        if (want.exactMedian !== null) {
          assert.ok(Math.abs(b.medianSeconds! - want.exactMedian) <= Math.max(1, 0.05 * want.exactMedian), what);
        }
        total += b.count;
      });
      assert.equal(total, facts.filter((f) => f.at >= FROM && f.at < TO).length);
    }
    const summary = await call(
      app,
      'GET',
      `/reports/summary?businessHours=${biz}&timezone=Asia/Kolkata&from=${iso(FROM)}&to=${iso(TO)}`,
      { token: manager.token },
    );
    assert.equal(summary.status, 200, JSON.stringify(summary.body));
    const want = expect(facts.filter((f) => f.at >= FROM && f.at < TO).map(seconds));
    const got = summary.data.replyTime;
    assert.equal(got.count, want.count);
    near(got.avgSeconds, want.avg, 'summary average');
    assert.equal(got.medianSeconds, want.median, 'summary median');
    assert.equal(got.p90Seconds, want.p90, 'summary p90');
    const bySms = await call(
      app,
      'GET',
      `/reports/breakdown?by=channel&businessHours=${biz}&from=${iso(FROM)}&to=${iso(TO)}`,
      { token: manager.token },
    );
    const sms = (bySms.data as { key: string; replyTime: { count: number; medianSeconds: number } }[]).find(
      (r) => r.key === 'sms',
    )!;
    const wantSms = expect(facts.filter((f) => f.at >= FROM && f.at < TO && f.channel === 'sms').map(seconds));
    assert.equal(sms.replyTime.count, wantSms.count);
    assert.equal(sms.replyTime.medianSeconds, wantSms.median, 'sms median');
  }
});
