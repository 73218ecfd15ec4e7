// Owns the report figures of seeded data (docs/reports.md): the seeder writes rows in bulk without
// the write paths that record figures, so this phase replays each new conversation's messages and
// each new task by the same rules (waits, replies, closes, completions, SLA targets), writes the
// facts, and sums them into the rollups in SQL, the new rows first in a table of their own so a
// second run adds to what the first left.
import { sql } from 'kysely';
import pg from 'pg';
import type { Store } from '../db/store.js';
import { type BusinessHours, businessSecondsBetween } from '../modules/reports/business-time.js';
import { type Fact, type Metric, TASK_METRICS, TIMED } from '../modules/reports/facts.js';
import { dueOf, type SlaSetting, type Target, targetMinutes, taskDeadline } from '../modules/reports/sla.js';
import { num, rdb } from '../modules/reports/tables.js';
import { SETTINGS } from '../modules/settings/registry.js';
import { getSetting } from '../modules/settings/repository.js';
import type { PhaseResult, World } from './seed-generate.js';
import { Progress } from './seed-writer.js';

const CHUNK = 2000;
const ms = (v: string | Date) => new Date(v).getTime();
const BREACHED: Record<Target, Metric> = {
  first_response: 'sla_first_response_breached',
  next_response: 'sla_next_response_breached',
  resolution: 'sla_resolution_breached',
};
const MET: Record<Target, Metric> = {
  first_response: 'sla_first_response_met',
  next_response: 'sla_next_response_met',
  resolution: 'sla_resolution_met',
};

interface Rules {
  hours: BusinessHours;
  sla: SlaSetting;
}

interface ConversationRow {
  id: string;
  channel: string;
  assignee: string | null;
  status: string;
  created_at: string | Date;
  updated_at: string | Date;
}
interface MessageRow {
  conversation_id: string;
  direction: string;
  type: string;
  sender_id: string | null;
  created_at: string | Date;
}

/** The facts of one seeded conversation, and its state at the end, by the recorder's rules. */
function replay(r: Rules, c: ConversationRow, messages: MessageRow[]) {
  const facts: Fact[] = [];
  const span = (a: number, b: number) => ({ wall: (b - a) / 1000, biz: businessSecondsBetween(r.hours, a, b) });
  const base = { channel: c.channel, assignee: c.assignee ?? '', department: '' };
  const opened = ms(c.created_at);
  facts.push({ metric: 'opened', at: opened, ...base });
  let waitAt: number | null = null;
  let waited = false;
  let target: Target = 'first_response';
  let due: number | null = null;
  for (const m of messages) {
    if (m.type !== 'text') continue;
    const at = ms(m.created_at);
    if (m.direction === 'inbound') {
      facts.push({ metric: 'inbound', at, ...base });
      if (waitAt !== null) continue;
      waitAt = at;
      target = waited ? 'next_response' : 'first_response';
      waited = true;
      due = dueOf(r.sla, r.hours, at, targetMinutes(r.sla, c.channel, target))?.due ?? null;
      continue;
    }
    const by = { ...base, assignee: m.sender_id ?? '' };
    facts.push({ metric: 'outbound', at, ...by });
    if (waitAt === null) continue;
    const d = span(waitAt, at);
    facts.push({ metric: 'reply_time', at, ...by, ...d });
    if (target === 'first_response') facts.push({ metric: 'first_response', at, ...by, ...d });
    if (due !== null)
      facts.push(at <= due ? { metric: MET[target], at, ...by } : { metric: BREACHED[target], at: due, ...by });
    waitAt = null;
    due = null;
  }
  const closed = c.status === 'closed';
  if (closed) {
    const at = ms(c.updated_at);
    facts.push({ metric: 'resolution', at, ...base, ...span(opened, at) });
    if (waitAt !== null && due !== null && due <= at) facts.push({ metric: BREACHED[target], at: due, ...base });
    waitAt = null;
  } else if (waitAt !== null && due !== null) {
    facts.push({ metric: BREACHED[target], at: due, ...base, ref: c.id });
  }
  return {
    facts,
    state: { id: c.id, closed: closed ? 1 : 0, opened_at: opened, wait_at: waitAt, waited: waited ? 1 : 0 },
  };
}

async function insertFacts(store: Store, facts: Fact[]): Promise<void> {
  const rows = facts.map((f) => ({
    metric: f.metric,
    at: f.at,
    channel: f.channel,
    assignee: f.assignee,
    department: f.department,
    wall: f.wall ?? null,
    biz: f.biz ?? null,
    ref: f.ref ?? null,
  }));
  for (let i = 0; i < rows.length; i += CHUNK) {
    await rdb(store)
      .insertInto('report_facts')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  }
}

const list = (ms: readonly string[]) => ms.map((m) => `'${m}'`).join(',');

/** Sums the facts after `afterId` into the rollups: quarter-hours from the facts, then every view of them. */
export async function rollUp(store: Store, afterId: number, pgUrl?: string): Promise<void> {
  if (store.dialect === 'postgres' && pgUrl !== undefined) {
    // Its own connection: a million conversations' sums outlast the pool's statement and read
    // timeouts, which guard requests, not this.
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query('set local statement_timeout = 0');
      await rollUpIn((text) => client.query(text), afterId, true);
      await client.query('commit');
    } finally {
      await client.end();
    }
    return;
  }
  await store.db
    .transaction()
    .execute((db) => rollUpIn((text) => sql.raw(text).execute(db), afterId, store.dialect === 'postgres'));
}

async function rollUpIn(run: (text: string) => Promise<unknown>, afterId: number, postgres: boolean): Promise<void> {
  const real = postgres ? 'double precision' : 'real';
  const tasks = list(TASK_METRICS);
  const timed = list([...TIMED]);
  const dept = `case when metric in (${tasks}) then department else '*' end`;
  const bin = (v: string) =>
    `case when ${v} < 20 then cast(floor(${v}) as integer) else 20 + cast(floor(ln(${v} / 20.0) / ln(1.1) + 1e-9) as integer) end`;
  for (const t of ['report_seed_rollups', 'report_seed_bins']) await run(`drop table if exists ${t}`);
  await run(`create table report_seed_rollups (metric text, channel text, assignee text, department text,
    grain integer, start bigint, n bigint, wall ${real}, biz ${real})`);
  await run(`create table report_seed_bins (metric text, biz integer, channel text, assignee text, department text,
    grain integer, start bigint, bin integer, n bigint)`);
  await run(`insert into report_seed_rollups (metric, channel, assignee, department, grain, start, n, wall, biz)
    select metric, channel, assignee, ${dept}, 900, (at / 900000) * 900, count(*), sum(coalesce(wall, 0)), sum(coalesce(biz, 0))
    from report_facts where id > ${afterId} group by metric, channel, assignee, ${dept}, at / 900000`);
  for (const [flag, column] of [
    [0, 'wall'],
    [1, 'biz'],
  ] as const) {
    const b = bin(`coalesce(${column}, 0)`);
    await run(`insert into report_seed_bins (metric, biz, channel, assignee, department, grain, start, bin, n)
      select metric, ${flag}, channel, assignee, ${dept}, 900, (at / 900000) * 900, ${b}, count(*)
      from report_facts where id > ${afterId} and metric in (${timed})
      group by metric, channel, assignee, ${dept}, at / 900000, ${b}`);
  }
  // Every other combination of channel, assignee and department ('*': all), from the full one.
  const masks: [boolean, boolean, boolean][] = [];
  for (const c of [true, false]) for (const a of [true, false]) for (const d of [true, false]) masks.push([c, a, d]);
  for (const [c, a, d] of masks.slice(1)) {
    const cols = `${c ? 'channel' : "'*'"}, ${a ? 'assignee' : "'*'"}, ${d ? 'department' : "'*'"}`;
    // Conversation figures have no department: only their channel/assignee views are new.
    const families = [`metric in (${tasks}) and department <> '*'`, ...(c && a ? [] : [`metric not in (${tasks})`])];
    const kept = [c && 'channel', a && 'assignee', d && 'department'].filter((k): k is string => k !== false);
    const group = ['metric', ...kept, 'start'].join(', ');
    for (const family of d ? families.slice(0, 1) : families) {
      const full = `grain = 900 and channel <> '*' and assignee <> '*' and ${family}`;
      await run(`insert into report_seed_rollups (metric, channel, assignee, department, grain, start, n, wall, biz)
        select metric, ${cols}, 900, start, sum(n), sum(wall), sum(biz) from report_seed_rollups where ${full}
        group by ${group}`);
      await run(`insert into report_seed_bins (metric, biz, channel, assignee, department, grain, start, bin, n)
        select metric, biz, ${cols}, 900, start, bin, sum(n) from report_seed_bins where ${full}
        group by ${group}, biz, bin`);
    }
  }
  for (const [from, to] of [
    [900, 3600],
    [3600, 86400],
    [86400, 604800],
    [604800, 2419200],
  ]) {
    await run(`insert into report_seed_rollups (metric, channel, assignee, department, grain, start, n, wall, biz)
      select metric, channel, assignee, department, ${to}, (start / ${to}) * ${to}, sum(n), sum(wall), sum(biz)
      from report_seed_rollups where grain = ${from} group by metric, channel, assignee, department, start / ${to}`);
    await run(`insert into report_seed_bins (metric, biz, channel, assignee, department, grain, start, bin, n)
      select metric, biz, channel, assignee, department, ${to}, (start / ${to}) * ${to}, bin, sum(n)
      from report_seed_bins where grain = ${from} group by metric, biz, channel, assignee, department, start / ${to}, bin`);
  }
  // Each rollup row with its histograms (migration 033), summed from the bin rows by report_hist_sum.
  const key = ['metric', 'channel', 'assignee', 'department', 'grain', 'start'];
  const merged = (c: string) =>
    `${c} = case when excluded.${c} is null then report_rollups.${c} else report_hist_add(report_rollups.${c}, excluded.${c}) end`;
  await run(`insert into report_rollups (${key.join(', ')}, n, wall, biz, wall_bins, biz_bins)
    select ${key.map((k) => `r.${k}`).join(', ')}, r.n, r.wall, r.biz, h.w, h.b
    from report_seed_rollups r left join (select ${key.join(', ')},
        report_hist_sum(case when biz = 0 then bin end, n) as w, report_hist_sum(case when biz = 1 then bin end, n) as b
      from report_seed_bins group by ${key.join(', ')}) h
    on ${key.map((k) => `h.${k} = r.${k}`).join(' and ')}
    where true
    on conflict (${key.join(', ')}) do update set
    n = report_rollups.n + excluded.n, wall = report_rollups.wall + excluded.wall, biz = report_rollups.biz + excluded.biz,
    ${merged('wall_bins')}, ${merged('biz_bins')}`);
  for (const t of ['report_seed_rollups', 'report_seed_bins']) await run(`drop table ${t}`);
}

/** Replays tasks the report tables do not know yet. */
async function replayTasks(store: Store, r: Rules): Promise<number> {
  let written = 0;
  let after = '';
  for (;;) {
    const rows = await store.db
      .selectFrom('tasks as t')
      .leftJoin('conversations as c', 'c.id', 't.conversation_id')
      .select([
        't.id',
        't.department',
        't.assignee',
        't.priority',
        't.status',
        't.due_at',
        't.completed_at',
        't.created_at',
        'c.channel',
      ])
      .where('t.id', '>', after)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('report_tasks' as never)
              .select(sql`1`.as('one'))
              .where(sql`report_tasks.id`, '=', sql.ref('t.id')),
          ),
        ),
      )
      .orderBy('t.id')
      .limit(CHUNK)
      .execute();
    if (rows.length === 0) return written;
    after = rows[rows.length - 1]!.id;
    const facts: Fact[] = [];
    const states: {
      id: string;
      created_at: number;
      deadline: number | null;
      completed_at: number | null;
      status: string;
    }[] = [];
    for (const t of rows) {
      const base = { channel: t.channel ?? '', assignee: t.assignee ?? '', department: t.department };
      const created = ms(t.created_at);
      const dueAt = t.due_at === null ? null : ms(t.due_at);
      const deadline = taskDeadline(r.sla, r.hours, { createdAt: created, dueAt, priority: t.priority });
      const completed = t.status === 'completed' && t.completed_at !== null ? ms(t.completed_at) : null;
      facts.push({ metric: 'task_created', at: created, ...base });
      if (completed !== null) {
        facts.push({
          metric: 'task_completed',
          at: completed,
          ...base,
          wall: (completed - created) / 1000,
          biz: businessSecondsBetween(r.hours, created, completed),
        });
        if (deadline !== null && completed <= deadline) facts.push({ metric: 'sla_tasks_met', at: completed, ...base });
      }
      if (deadline !== null && t.status !== 'cancelled' && (completed === null || completed > deadline)) {
        facts.push({ metric: 'task_overdue', at: deadline, ...base, ref: t.id });
      }
      states.push({ id: t.id, created_at: created, deadline, completed_at: completed, status: t.status });
    }
    await store.transact(async (tx) => {
      await insertFacts(tx as unknown as Store, facts);
      await rdb(tx).insertInto('report_tasks').values(states).execute();
      const withDeadline = states.filter((s) => s.deadline !== null);
      if (tx.dialect === 'postgres') {
        await sql`update tasks set deadline = v.d from (select unnest(${withDeadline.map((s) => s.id)}::text[]) as id,
          unnest(${withDeadline.map((s) => new Date(s.deadline!).toISOString())}::timestamptz[]) as d) v where tasks.id = v.id`.execute(
          tx,
        );
      } else {
        for (const s of withDeadline) {
          await tx
            .updateTable('tasks')
            .set({ deadline: new Date(s.deadline!).toISOString() })
            .where('id', '=', s.id)
            .execute();
        }
      }
    });
    written += facts.length;
  }
}

export async function seedReports(store: Store, world: World, pgUrl?: string): Promise<PhaseResult> {
  const value = async <T>(key: string) => ((await getSetting(store, key))?.value ?? SETTINGS[key]!.default) as T;
  const r: Rules = { hours: await value<BusinessHours>('business_hours'), sla: await value<SlaSetting>('sla') };
  const progress = new Progress('report facts', world.convIds.length);
  const before = await rdb(store)
    .selectFrom('report_facts')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  const afterId = num(before?.id as number | null) ?? 0;
  let written = 0;
  for (let i = 0; i < world.convIds.length; i += CHUNK) {
    const ids = world.convIds.slice(i, i + CHUNK);
    const conversations = (await store.db
      .selectFrom('conversations')
      .select(['id', 'channel', 'assignee', 'status', 'created_at', 'updated_at'])
      .where('id', 'in', ids)
      .execute()) as ConversationRow[];
    const messages = (await store.db
      .selectFrom('messages')
      .select(['conversation_id', 'direction', 'type', 'sender_id', 'created_at'])
      .where('conversation_id', 'in', ids)
      .orderBy('conversation_id')
      .orderBy('created_at')
      .orderBy('id')
      .execute()) as MessageRow[];
    const byConversation = new Map<string, MessageRow[]>();
    for (const m of messages) {
      const l = byConversation.get(m.conversation_id) ?? [];
      l.push(m);
      byConversation.set(m.conversation_id, l);
    }
    const facts: Fact[] = [];
    const states: ReturnType<typeof replay>['state'][] = [];
    for (const c of conversations) {
      const out = replay(r, c, byConversation.get(c.id) ?? []);
      facts.push(...out.facts);
      states.push(out.state);
    }
    await store.transact(async (tx) => {
      await insertFacts(tx as unknown as Store, facts);
      if (states.length > 0) await rdb(tx).insertInto('report_conversations').values(states).execute();
    });
    written += facts.length;
    progress.update(i + ids.length);
  }
  written += await replayTasks(store, r);
  await rollUp(store, afterId, pgUrl);
  return { rows: written, ms: progress.finish() };
}
