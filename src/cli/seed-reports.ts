// Owns the report figures of seeded data (docs/reports.md): the seeder writes rows in bulk without
// the write paths that record figures, so this phase replays each new conversation's messages and
// each new task by the same rules (waits, replies, closes, completions, SLA targets), writes the
// facts and the running state in bulk, and keeps the facts in memory to sum them into the rollups
// in one pass (./seed-rollups.ts), added to what a previous run left.
import { sql } from 'kysely';
import type { Store } from '../db/store.js';
import { type BusinessHours, businessSecondsBetween } from '../modules/reports/business-time.js';
import type { Fact, Metric } from '../modules/reports/facts.js';
import { pgHistogram, sqliteHistogram } from '../modules/reports/histogram.js';
import { dueOf, type SlaSetting, type Target, targetMinutes, taskDeadline } from '../modules/reports/sla.js';
import { SETTINGS } from '../modules/settings/registry.js';
import { getSetting } from '../modules/settings/repository.js';
import { BulkLoader, type BulkSink, type BulkTable } from './seed-bulk.js';
import type { PhaseResult, World } from './seed-generate.js';
import { FactLog, rollupRows } from './seed-rollups.js';
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

const FACTS: BulkTable = {
  table: 'report_facts',
  columns: ['metric', 'at', 'channel', 'assignee', 'department', 'wall', 'biz', 'ref'],
  types: ['text', 'int8', 'text', 'text', 'text', 'float8', 'float8', 'text'],
};

const ROLLUP_KEY = ['metric', 'channel', 'assignee', 'department', 'grain', 'start'];
const merged = (c: string) =>
  `${c} = case when excluded.${c} is null then report_rollups.${c} else report_hist_add(report_rollups.${c}, excluded.${c}) end`;
/** What the write path's upsert does (src/modules/reports/facts.ts): a row a previous run left is added to. */
const ROLLUPS: BulkTable = {
  table: 'report_rollups',
  columns: [...ROLLUP_KEY, 'n', 'wall', 'biz', 'wall_bins', 'biz_bins'],
  types: ['text', 'text', 'text', 'text', 'int4', 'int8', 'int8', 'float8', 'float8', 'int4[]', 'int4[]'],
  onConflict: `on conflict (${ROLLUP_KEY.join(', ')}) do update set n = report_rollups.n + excluded.n,
    wall = report_rollups.wall + excluded.wall, biz = report_rollups.biz + excluded.biz,
    ${merged('wall_bins')}, ${merged('biz_bins')}`,
};

const CONVERSATION_STATES: BulkTable = {
  table: 'report_conversations',
  columns: ['id', 'closed', 'opened_at', 'wait_at', 'waited'],
  types: ['text', 'int4', 'int8', 'int8', 'int4'],
};

const TASK_STATES: BulkTable = {
  table: 'report_tasks',
  columns: ['id', 'created_at', 'deadline', 'completed_at', 'status'],
  types: ['text', 'int8', 'int8', 'int8', 'text'],
};

/** Rows written per transaction: commits are cheap, and a smaller WAL is checkpointed sooner. */
const ROWS_PER_TX = 250_000;

interface TaskRow {
  id: string;
  department: string;
  assignee: string | null;
  priority: string;
  status: string;
  due_at: string | Date | null;
  completed_at: string | Date | null;
  created_at: string | Date;
  channel: string | null;
}

/** The facts of one seeded task and its state, by the recorder's rules. */
function replayTask(r: Rules, t: TaskRow) {
  const facts: Fact[] = [];
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
  return { facts, state: { id: t.id, created_at: created, deadline, completed_at: completed, status: t.status } };
}

/** Conversations and their messages, CHUNK conversations at a time. */
async function readConversations(store: Store, ids: string[]) {
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
    const l = byConversation.get(m.conversation_id);
    if (l === undefined) byConversation.set(m.conversation_id, [m]);
    else l.push(m);
  }
  return { conversations, byConversation };
}

/** Tasks the report tables do not know yet, CHUNK at a time after `after` (by id). */
function readTasks(store: Store, after: string): Promise<TaskRow[]> {
  return store.db
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
    .execute() as Promise<TaskRow[]>;
}

class Writer {
  private sinceCommit = 0;
  readonly facts: BulkSink;
  constructor(
    readonly loader: BulkLoader,
    readonly log: FactLog,
  ) {
    this.facts = loader.sink(FACTS);
  }

  async fact(f: Fact): Promise<void> {
    this.log.push(f);
    await this.facts.add(
      f.metric,
      f.at,
      f.channel,
      f.assignee,
      f.department,
      f.wall ?? null,
      f.biz ?? null,
      f.ref ?? null,
    );
    await this.counted(1);
  }

  /** Commits once enough rows were written since the last commit. */
  async counted(rows: number): Promise<void> {
    this.sinceCommit += rows;
    if (this.sinceCommit < ROWS_PER_TX) return;
    this.sinceCommit = 0;
    await this.loader.commit();
  }
}
export async function seedReports(store: Store, world: World, pgUrl?: string): Promise<PhaseResult> {
  const value = async <T>(key: string) => ((await getSetting(store, key))?.value ?? SETTINGS[key]!.default) as T;
  const r: Rules = { hours: await value<BusinessHours>('business_hours'), sla: await value<SlaSetting>('sla') };
  const progress = new Progress('report facts', world.convIds.length);
  const log = new FactLog();
  const loader = await BulkLoader.open(store, pgUrl);
  try {
    const w = new Writer(loader, log);
    const states = loader.sink(CONVERSATION_STATES);
    const chunks = Math.ceil(world.convIds.length / CHUNK);
    const read = (k: number) => readConversations(store, world.convIds.slice(k * CHUNK, (k + 1) * CHUNK));
    // The next chunk is read while this one is replayed and written (PostgreSQL answers meanwhile).
    let next = chunks > 0 ? read(0) : undefined;
    for (let k = 0; k < chunks; k++) {
      const { conversations, byConversation } = await next!;
      next = k + 1 < chunks ? read(k + 1) : undefined;
      for (const c of conversations) {
        const out = replay(r, c, byConversation.get(c.id) ?? []);
        for (const f of out.facts) await w.fact(f);
        const s = out.state;
        await states.add(s.id, s.closed, s.opened_at, s.wait_at, s.waited);
        await w.counted(1);
      }
      progress.update(Math.min(world.convIds.length, (k + 1) * CHUNK));
    }
    const tasks = loader.sink(TASK_STATES);
    const deadlines: [string, string][] = [];
    let after = '';
    for (;;) {
      const rows = await readTasks(store, after);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.id;
      for (const t of rows) {
        const out = replayTask(r, t);
        for (const f of out.facts) await w.fact(f);
        const s = out.state;
        await tasks.add(s.id, s.created_at, s.deadline, s.completed_at, s.status);
        if (s.deadline !== null) deadlines.push([s.id, new Date(s.deadline).toISOString()]);
        await w.counted(1);
      }
    }
    await loader.commit();
    await loader.setColumn('tasks', 'deadline', 'timestamptz', deadlines);
    // Into an empty table (a first seed) a plain insert does: checking each row for a conflict
    // first costs PostgreSQL about as much again.
    const fresh = (await sql`select 1 from report_rollups limit 1`.execute(store.db)).rows.length === 0;
    const rollups = loader.sink(fresh ? { ...ROLLUPS, onConflict: undefined } : ROLLUPS);
    const histogram = store.dialect === 'postgres' ? pgHistogram : sqliteHistogram;
    const bins = (c: Map<number, number> | null) => (c === null || c.size === 0 ? null : histogram(c));
    for (const batch of rollupRows(log)) {
      for (const x of batch) {
        await rollups.add(
          x.metric,
          x.channel,
          x.assignee,
          x.department,
          x.grain,
          x.start,
          x.n,
          x.wall,
          x.biz,
          bins(x.wallBins),
          bins(x.bizBins),
        );
      }
      await w.counted(batch.length);
    }
    await loader.close();
    return { rows: w.facts.written, ms: progress.finish() };
  } catch (err) {
    await loader.abort();
    throw err;
  }
}
