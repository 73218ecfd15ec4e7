// Owns the three reports (docs/reports.md): the summary of a period beside the previous one, a
// time series of one figure, and a breakdown by channel, assignee or department, all read from
// the figures the writes recorded (src/modules/reports/recorder.ts).
import type { Executor } from '../../db/types.js';
import { DEFAULT_DEPARTMENTS } from '../settings/registry.js';
import { getSetting } from '../settings/repository.js';
import { quantileOfCounts, quantileOfSorted } from './bins.js';
import { bucketsOf, type Granularity } from './buckets.js';
import { type Metric, SCHEDULED } from './facts.js';
import { type Acc, type Dimension, type Figures, metricsOf, readFigures, type Scope } from './figures.js';

export interface Stat {
  count: number;
  avgSeconds: number | null;
  medianSeconds: number | null;
  p90Seconds: number | null;
}
export interface Hits {
  met: number;
  breached: number;
}

const round = (v: number | null) => (v === null ? null : Math.round(v * 1000) / 1000);
const EMPTY: Acc = { n: 0, seconds: 0, bins: new Float64Array(0) };

function quantile(a: Acc, q: number): number | null {
  if (a.values !== undefined && a.values.length === a.n)
    return quantileOfSorted(
      [...a.values].sort((x, y) => x - y),
      q,
    );
  return quantileOfCounts(a.bins, q);
}

export function statOf(a: Acc = EMPTY): Stat {
  if (a.n <= 0) return { count: 0, avgSeconds: null, medianSeconds: null, p90Seconds: null };
  return {
    count: a.n,
    avgSeconds: round(a.seconds / a.n),
    medianSeconds: round(quantile(a, 0.5)),
    p90Seconds: round(quantile(a, 0.9)),
  };
}

const SUMMARY_METRICS: Metric[] = [
  'opened',
  'resolution',
  'inbound',
  'outbound',
  'first_response',
  'reply_time',
  'task_created',
  'task_completed',
  'sla_first_response_met',
  'sla_next_response_met',
  'sla_resolution_met',
  'sla_tasks_met',
];
const DUE_METRICS: Metric[] = [...SCHEDULED];

/** The figures of one period from its metrics. */
function shape(m: Map<Metric, Acc> | undefined, only?: 'tasks') {
  const get = (k: Metric) => m?.get(k) ?? EMPTY;
  const count = (k: Metric) => get(k).n;
  const tasks = {
    created: count('task_created'),
    completed: count('task_completed'),
    overdue: count('task_overdue'),
    completion: statOf(get('task_completed')),
  };
  const taskHits = { met: count('sla_tasks_met'), breached: count('task_overdue') };
  if (only === 'tasks') return { tasks, sla: { tasks: taskHits } };
  return {
    conversations: { opened: count('opened'), resolved: count('resolution') },
    messages: { inbound: count('inbound'), outbound: count('outbound') },
    firstResponse: statOf(get('first_response')),
    replyTime: statOf(get('reply_time')),
    resolution: statOf(get('resolution')),
    tasks,
    sla: {
      firstResponse: { met: count('sla_first_response_met'), breached: count('sla_first_response_breached') },
      nextResponse: { met: count('sla_next_response_met'), breached: count('sla_next_response_breached') },
      resolution: { met: count('sla_resolution_met'), breached: count('sla_resolution_breached') },
      tasks: taskHits,
    },
  };
}

/** Figures of each range; a breach or overdue counts at its due moment, so only once that has passed. */
async function periodFigures(x: Executor, ranges: [number, number][], s: Scope, now: number): Promise<Figures> {
  const clamped = ranges.map(([a, b]) => [a, Math.max(a, Math.min(b, now))] as [number, number]);
  // A period that has ended is read once for every figure.
  if (clamped.every(([, b], i) => b === ranges[i]![1]))
    return readFigures(x, [...SUMMARY_METRICS, ...DUE_METRICS], ranges, s);
  const out = await readFigures(x, SUMMARY_METRICS, ranges, s);
  const due = await readFigures(x, DUE_METRICS, clamped, s);
  for (const [range, groups] of due) {
    for (const [group, metrics] of groups) {
      for (const [metric, acc] of metrics) {
        const m = metricsOf(out, range, group);
        m.set(metric, acc);
      }
    }
  }
  return out;
}

export interface Period {
  from: number;
  to: number;
  biz: boolean;
  channel?: string | undefined;
  assignee?: string | undefined;
  department?: string | undefined;
}

const iso = (t: number) => new Date(t).toISOString();
const scopeOf = (p: Period, by?: Dimension): Scope => ({
  channel: p.channel,
  assignee: p.assignee,
  department: p.department,
  biz: p.biz,
  by,
});

export async function summary(x: Executor, p: Period, now = Date.now()) {
  const prevFrom = p.from - (p.to - p.from);
  const f = await periodFigures(
    x,
    [
      [p.from, p.to],
      [prevFrom, p.from],
    ],
    scopeOf(p),
    now,
  );
  return {
    from: iso(p.from),
    to: iso(p.to),
    businessHours: p.biz,
    ...shape(f.get(0)?.get('')),
    previous: { from: iso(prevFrom), to: iso(p.from), businessHours: p.biz, ...shape(f.get(1)?.get('')) },
  };
}

export const SERIES_METRICS = {
  conversations_opened: 'opened',
  conversations_resolved: 'resolution',
  messages_inbound: 'inbound',
  messages_outbound: 'outbound',
  first_response: 'first_response',
  reply_time: 'reply_time',
  resolution: 'resolution',
  tasks_created: 'task_created',
  tasks_completed: 'task_completed',
} as const satisfies Record<string, Metric>;
export type SeriesMetric = keyof typeof SERIES_METRICS;
const TIME_SERIES = new Set<SeriesMetric>(['first_response', 'reply_time', 'resolution']);
export const MAX_BUCKETS = 1000;

/** One row per bucket; null when there would be more than MAX_BUCKETS. */
export async function timeseries(x: Executor, p: Period, metric: SeriesMetric, g: Granularity, tz: string) {
  const buckets = bucketsOf(p.from, p.to, g, tz, MAX_BUCKETS);
  if (buckets === null) return null;
  const m = SERIES_METRICS[metric];
  const f = await readFigures(x, [m], buckets, scopeOf(p));
  const timed = TIME_SERIES.has(metric);
  return buckets.map(([start], i) => {
    const s = statOf(f.get(i)?.get('')?.get(m));
    return {
      start: iso(start),
      count: s.count,
      avgSeconds: timed ? s.avgSeconds : null,
      medianSeconds: timed ? s.medianSeconds : null,
    };
  });
}

/** Every value a breakdown's rows may have: the channels, the staff, the departments ('' for none). */
async function keysOf(x: Executor, by: Dimension): Promise<string[]> {
  if (by === 'channel') return ['whatsapp', 'sms', 'email', 'web', ''];
  if (by === 'assignee') return ['', ...(await x.selectFrom('staff').select('id').execute()).map((r) => r.id)];
  const set = ((await getSetting(x, 'departments'))?.value ?? []) as string[];
  return [...new Set(['', ...DEFAULT_DEPARTMENTS, ...set])];
}

export async function breakdown(x: Executor, p: Period, by: Dimension, now = Date.now()) {
  const f = await periodFigures(x, [[p.from, p.to]], { ...scopeOf(p, by), keys: await keysOf(x, by) }, now);
  const rows = [];
  for (const [key, metrics] of f.get(0) ?? new Map<string, Map<Metric, Acc>>()) {
    if (![...metrics.values()].some((a) => a.n !== 0)) continue;
    // Tasks without a conversation have no channel: they are left out of a channel breakdown.
    if (by === 'channel' && key === '') continue;
    const shaped = shape(metrics, by === 'department' ? 'tasks' : undefined);
    rows.push({ key: key === '' ? null : key, ...shaped });
  }
  return rows.sort((a, b) => (a.key ?? '').localeCompare(b.key ?? ''));
}
