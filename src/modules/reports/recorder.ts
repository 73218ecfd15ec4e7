// Owns turning writes into figures (docs/reports.md): a conversation opened, a message stored, a
// status changed, a task created or changed each call in here, inside the transaction of the
// write, and the measures that end with it (a wait, an open period, a task) become facts. The
// running state (when the current wait began, which SLA targets run and until when) is kept in
// report_conversations and report_tasks.
import { heldForCommit, heldSoFar } from '../../db/executor.js';
import { type Param, prepared, updateRowById } from '../../db/prepared.js';
import { fromJson } from '../../db/store.js';
import type { CommitTotal, Executor } from '../../db/types.js';
import { SETTINGS } from '../settings/registry.js';
import { type BusinessHours, businessSecondsBetween } from './business-time.js';
import { addFacts, type Fact, type Metric, retractFacts } from './facts.js';
import {
  type ConversationSla,
  dueOf,
  SLA_COLUMNS,
  SLA_COLUMNS_OF_C,
  type SlaColumns as SlaRow,
  type SlaSetting,
  slaOfRow,
  type Target,
  targetMinutes,
  taskDeadline,
} from './sla.js';
import {
  endedMoments,
  nextSlaRun,
  overdueMoment,
  owedOf,
  scheduleConversationSla,
  scheduleTaskOverdue,
} from './sla-jobs.js';
import { num, rdb } from './tables.js';

interface Rules {
  hours: BusinessHours;
  sla: SlaSetting;
}

/** Both settings a figure is judged by, in one prepared statement (each write of a text reads them). */
const rulesRows = prepared((db) =>
  db.selectFrom('settings').select(['key', 'value']).where('key', 'in', ['business_hours', 'sla']),
);

/**
 * The rules as a transaction first read them, for the rest of it: a write that opens a
 * conversation and stores its first text (a journey step) judges both by the same read. No
 * transaction that records figures also saves these settings.
 */
const rulesByTx = new WeakMap<Executor, Promise<Rules>>();

function rulesOf(x: Executor): Promise<Rules> {
  if (!('onCommit' in x)) return readRules(x);
  let rules = rulesByTx.get(x);
  if (rules === undefined) {
    rules = readRules(x);
    rulesByTx.set(x, rules);
  }
  return rules;
}

async function readRules(x: Executor): Promise<Rules> {
  const rows = await x.run(rulesRows, {});
  const value = <T>(key: string): T => {
    const row = rows.find((r) => r.key === key);
    return (row === undefined ? structuredClone(SETTINGS[key]!.default) : fromJson(row.value)) as T;
  };
  return { hours: value<BusinessHours>('business_hours'), sla: value<SlaSetting>('sla') };
}

const ms = (iso: string) => Date.parse(iso);
const span = (r: Rules, a: number, b: number) => ({ wall: (b - a) / 1000, biz: businessSecondsBetween(r.hours, a, b) });

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

interface ConversationNow {
  id: string;
  channel: string;
  assignee: string;
  target: Target | null;
  responseDue: number | null;
  resolutionDue: number | null;
  /** Its running targets as they are before the write. */
  sla: ConversationSla;
}

const msOrNull = (v: string | Date | null | undefined) =>
  v === null || v === undefined ? null : new Date(v).getTime();
const isoOrNull = (v: number | null | undefined) => (v === null || v === undefined ? null : new Date(v).toISOString());

/** A task's report state (its deadline and what was reported of it). */
const reportTask = prepared((db, p: Param<{ id: string }>) =>
  rdb(db).selectFrom('report_tasks').selectAll().where('id', '=', p('id')),
);

/**
 * A conversation's report columns and its running state (undefined before it was first counted),
 * in one prepared statement: every text written reads both.
 */
const conversationRow = prepared((db, p: Param<{ id: string }>) =>
  rdb(db)
    .selectFrom('conversations as c')
    .leftJoin('report_conversations as r', 'r.id', 'c.id')
    .select(['c.id', 'c.channel', 'c.assignee', ...SLA_COLUMNS_OF_C])
    .select(['r.id as state_id', 'r.closed', 'r.opened_at', 'r.wait_at', 'r.waited', 'r.sla_reported', 'r.sla_owed'])
    .where('c.id', '=', p('id')),
);

interface ConversationState {
  closed: number;
  opened_at: string | number | bigint;
  wait_at: string | number | bigint | null;
  waited: number;
  /** The SLA moments reported so far, and those owed (see setSla). */
  sla_reported: string | number | bigint | null | undefined;
  sla_owed: string | null | undefined;
}
type State = ConversationState | undefined;

async function conversationAndState(
  x: Executor,
  id: string,
): Promise<{ c: ConversationNow; s: ConversationState | undefined } | undefined> {
  const row = await x.first(conversationRow, { id });
  if (row === undefined) return undefined;
  // Its state, if this transaction opened it, is still held for the COMMIT (holdState).
  const held = heldSoFar(x, STATES)?.get(id);
  if (held !== undefined) return { c: nowOfRow(row), s: { ...held } };
  return {
    c: nowOfRow(row),
    s:
      row.state_id === null
        ? undefined
        : {
            closed: row.closed!,
            opened_at: row.opened_at!,
            wait_at: row.wait_at,
            waited: row.waited!,
            sla_reported: row.sla_reported,
            sla_owed: row.sla_owed,
          },
  };
}

function nowOfRow(row: SlaRow & { id: string; channel: string; assignee: string | null }): ConversationNow {
  return {
    id: row.id,
    channel: row.channel,
    assignee: row.assignee ?? '',
    target: row.sla_target as Target | null,
    responseDue: msOrNull(row.sla_response_due),
    resolutionDue: msOrNull(row.sla_resolution_due),
    sla: slaOfRow(row),
  };
}

/** A report_conversations row as a transaction writes it. */
type StateRow = { id: string; closed: number; opened_at: number; wait_at: number | null; waited: number };

/**
 * The report state of the conversations a PostgreSQL transaction opened, held for its COMMIT and
 * written there in one statement with its facts and rollups (Tx.addAtCommit): one round trip less
 * per conversation opened (a journey step's, docs/stays.md). Until then this transaction reads and
 * changes the held rows here (conversationAndState, setState), and no other can see the
 * conversation. Not on SQLite: a later transaction of the same group commit sees the conversation
 * before the commit, and would find no state.
 */
const STATES: CommitTotal<Map<string, ConversationState & StateRow>> = {
  empty: () => new Map(),
  add(total, part) {
    for (const [id, row] of part) total.set(id, row);
  },
  statements: (x, total) =>
    total.size === 0
      ? []
      : [
          rdb(x)
            .insertInto('report_conversations')
            .values(
              [...total.values()].map((r) => ({
                id: r.id,
                closed: r.closed,
                opened_at: r.opened_at,
                wait_at: num(r.wait_at),
                waited: r.waited,
                sla_reported: num(r.sla_reported),
                sla_owed: r.sla_owed ?? null,
              })),
            )
            .compile(),
        ],
};

/** Writes a new conversation's report state: held for the COMMIT where that can be done (STATES). */
async function insertState(x: Executor, row: StateRow): Promise<void> {
  const held = heldForCommit(x, STATES);
  if (held === undefined) {
    await rdb(x).insertInto('report_conversations').values(row).execute();
    return;
  }
  held.set(row.id, { ...row, sla_reported: null, sla_owed: null });
}

/** Changes a conversation's report state: the held row when this transaction holds it, else the stored one. */
async function setState(x: Executor, id: string, values: Partial<StateRow> & { sla_owed?: string }): Promise<void> {
  const held = heldSoFar(x, STATES)?.get(id);
  if (held !== undefined) Object.assign(held, values);
  else await updateRowById(x, 'report_conversations', id, values);
}

async function conversationNow(x: Executor, id: string): Promise<ConversationNow | undefined> {
  return (await conversationAndState(x, id))?.c;
}

type SlaColumns = {
  sla_target?: Target | null;
  sla_response_due?: number | null;
  sla_response_risk?: number | null;
  sla_resolution_due?: number | null;
  sla_resolution_risk?: number | null;
  sla_breached?: boolean;
};

/** SLA columns as they are written to a conversation row, on `x`'s store. */
function slaValues(x: Executor, cols: SlaColumns): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cols)) {
    if (k === 'sla_breached') set[k] = x.dialect === 'postgres' ? v : v ? 1 : 0;
    else if (k === 'sla_target') set[k] = v;
    else set[k] = isoOrNull(v as number | null);
  }
  return set;
}

/**
 * Writes the conversation's running SLA targets into its row (read by `?sla=` and its `sla` field)
 * at `at`, and moves its SLA event job (src/modules/reports/sla-jobs.ts) to the next moment not yet
 * reported. A moment that came but was not reported yet and whose target this write ends is kept
 * as owed (`s`: the conversation's report state, if any), so the job still reports it.
 */
async function setSla(
  x: Executor,
  c: ConversationNow,
  cols: SlaColumns,
  s: State,
  at: number,
): Promise<WrittenSla | undefined> {
  const [row] = (await updateRowById(x, 'conversations', c.id, slaValues(x, cols), SLA_COLUMNS)) as unknown as SlaRow[];
  if (row === undefined) return undefined;
  return slaWritten(x, c, cols, row, s, at);
}

/** setSla once the row holds `row` (its SLA columns as written): the owed moments and the SLA job. */
async function slaWritten(
  x: Executor,
  c: ConversationNow,
  cols: SlaColumns,
  row: SlaRow,
  s: State,
  at: number,
): Promise<WrittenSla> {
  const id = c.id;
  const state = slaOfRow(row);
  const reported = num(s?.sla_reported);
  const ended = s === undefined ? [] : endedMoments(c.sla, state, reported, at);
  const was = owedOf(s?.sla_owed);
  const owed = [...was, ...ended];
  if (ended.length > 0) {
    await setState(x, id, { sla_owed: JSON.stringify(owed) });
  }
  // The job is due at the row's next run: left alone when the write does not move it (a conversation
  // opened without a resolution target, a wait whose moments all fall after the resolution's next).
  const next = nextSlaRun(state, owed, reported);
  if (next !== nextSlaRun(c.sla, was, reported)) await scheduleConversationSla(x, id, next);
  return { ...row, sla_breached: Boolean(cols.sla_breached ?? c.sla.breached) };
}

/** A conversation's SLA columns as a write left them (what its `sla` field is made of, slaView). */
export type WrittenSla = SlaRow & { sla_breached: boolean };

const NO_RESPONSE_TARGET: SlaColumns = { sla_target: null, sla_response_due: null, sla_response_risk: null };

const fact = (c: ConversationNow, metric: Metric, at: number, extra: Partial<Fact> = {}): Fact => ({
  metric,
  at,
  channel: c.channel,
  assignee: c.assignee,
  department: '',
  ...extra,
});

/** The SLA columns of a conversation (re)opened at `at`: its resolution target only, if the setting has one. */
function openedSla(r: Rules, c: ConversationNow, at: number) {
  const due = dueOf(r.sla, r.hours, at, targetMinutes(r.sla, c.channel, 'resolution'));
  const cols: SlaColumns = {
    ...NO_RESPONSE_TARGET,
    sla_resolution_due: due?.due ?? null,
    sla_resolution_risk: due?.risk ?? null,
    sla_breached: false,
  };
  return { due, cols };
}

/** The report state and facts of a conversation (re)opened at `at` (`s`: its state before, if any). */
async function openState(x: Executor, c: ConversationNow, at: number, s: State, due: { due: number } | null) {
  const row = { closed: 0, opened_at: at, wait_at: null, waited: 0 };
  if (s !== undefined) await setState(x, c.id, row);
  else await insertState(x, { id: c.id, ...row });
  const facts = [fact(c, 'opened', at)];
  if (due !== null) facts.push(fact(c, BREACHED.resolution, due.due, { ref: c.id }));
  await addFacts(x, facts);
}

/** The state and facts of a conversation reopened at `at` (`s`: its state before, if any), with its resolution target. */
async function open(x: Executor, r: Rules, c: ConversationNow, at: number, s: State) {
  const { due, cols } = openedSla(r, c, at);
  const written = await setSla(x, c, cols, s, at);
  await openState(x, c, at, s, due);
  return written;
}

/**
 * A conversation opened in this transaction as its opening left it: its SLA columns, and what
 * messageStored reads of it, so a message written into it before anything else writes to it
 * (a journey step's) is counted without that read.
 */
export interface Opened {
  readonly sla: WrittenSla;
  readonly c: ConversationNow;
  readonly s: ConversationState;
}

/** A conversation about to be opened: the SLA columns its insert writes, and the rest of its opening. */
export interface Opening {
  /** Written with the conversation's other columns in its insert (no update of the row after). */
  readonly columns: Record<string, unknown>;
  /** Records the opening once the row is inserted (its SLA job, report state and facts); gives it as left. */
  opened(): Promise<Opened>;
}

/**
 * A conversation is being created (`at`, ISO): its running SLA targets (a resolution target, if the
 * sla setting has one) are worked out before its row is written, so its insert writes them and no
 * update follows (every path that opens a conversation: a request, a guest's first message, a
 * journey step); `opened()` then records the rest as a reopening does, with the same figures.
 */
export async function conversationOpening(
  x: Executor,
  inserted: { id: string; channel: string; assignee: string | null },
  at: string,
): Promise<Opening> {
  const c: ConversationNow = {
    id: inserted.id,
    channel: inserted.channel,
    assignee: inserted.assignee ?? '',
    target: null,
    responseDue: null,
    resolutionDue: null,
    sla: slaOfRow({}),
  };
  const when = ms(at);
  const { due, cols } = openedSla(await rulesOf(x), c, when);
  const columns = slaValues(x, cols);
  return {
    columns,
    async opened() {
      // The columns as the insert wrote them, as a read of them would give them back (ISO times).
      const row: SlaRow = {
        sla_target: null,
        sla_response_due: null,
        sla_response_risk: null,
        sla_resolution_due: columns.sla_resolution_due as string | null,
        sla_resolution_risk: columns.sla_resolution_risk as string | null,
      };
      const sla = await slaWritten(x, c, cols, row, undefined, when);
      await openState(x, c, when, undefined, due);
      // As conversationAndState would read it now: the columns and the state written.
      const state = slaOfRow(sla as Parameters<typeof slaOfRow>[0]);
      return {
        sla,
        c: {
          ...c,
          target: state.responseTarget,
          responseDue: state.responseDue,
          resolutionDue: state.resolutionDue,
          sla: state,
        },
        s: { closed: 0, opened_at: when, wait_at: null, waited: 0, sla_reported: null, sla_owed: null },
      };
    },
  };
}

/**
 * Ends a running SLA target at `at`: met (retracting the breach written ahead) when on time, a
 * miss remembered otherwise. `count` false stops it without a figure (a close stops a response target).
 */
async function endTarget(
  x: Executor,
  c: ConversationNow,
  target: Target,
  due: number | null,
  at: number,
  count: boolean,
) {
  if (due === null) return { missed: false };
  if (at < due || (count && at === due)) {
    await retractFacts(x, c.id, [BREACHED[target]], at);
    if (count) await addFacts(x, [fact(c, MET[target], at)]);
    return { missed: false };
  }
  return { missed: true };
}

interface MessageWritten {
  conversationId: string;
  direction: 'inbound' | 'outbound';
  type: string;
  senderType: string;
  senderId: string | null;
  createdAt: string;
}

/** A message was stored: counts texts, starts a wait on a guest's text, ends it on a staff reply. */
export async function messageStored(x: Executor, m: MessageWritten, opened?: Opened): Promise<void> {
  if (m.type !== 'text') return;
  let both =
    opened !== undefined && opened.c.id === m.conversationId
      ? { c: opened.c, s: opened.s }
      : await conversationAndState(x, m.conversationId);
  if (both === undefined) return;
  let { c, s } = both;
  const at = ms(m.createdAt);
  const r = await rulesOf(x);
  if (s === undefined || (m.direction === 'inbound' && s.closed === 1)) {
    // A guest writing to a closed conversation reopens it (the row was reopened with this message).
    await open(x, r, c, at, s);
    both = (await conversationAndState(x, m.conversationId))!;
    c = both.c;
    s = both.s!;
  }
  if (m.direction === 'inbound') {
    await addFacts(x, [fact(c, 'inbound', at)]);
    if (s.wait_at !== null) return;
    const target: Target = s.waited === 1 ? 'next_response' : 'first_response';
    const due = dueOf(r.sla, r.hours, at, targetMinutes(r.sla, c.channel, target));
    await setState(x, c.id, { wait_at: at, waited: 1 });
    await setSla(
      x,
      c,
      { sla_target: target, sla_response_due: due?.due ?? null, sla_response_risk: due?.risk ?? null },
      s,
      at,
    );
    if (due !== null) await addFacts(x, [fact(c, BREACHED[target], due.due, { ref: c.id })]);
    return;
  }
  const byStaff = m.senderType === 'staff' || m.senderType === 'api_key';
  const sender = m.senderType === 'staff' ? (m.senderId ?? '') : m.senderType === 'api_key' ? '' : c.assignee;
  const by = { ...c, assignee: sender };
  const facts: Fact[] = [fact(by, 'outbound', at)];
  const waitAt = num(s.wait_at);
  if (byStaff && waitAt !== null) {
    const d = span(r, waitAt, at);
    facts.push(fact(by, 'reply_time', at, d));
    const target = c.target ?? 'next_response';
    if (target === 'first_response') facts.push(fact(by, 'first_response', at, d));
    const { missed } = await endTarget(x, by, target, c.responseDue, at, true);
    await setState(x, c.id, { wait_at: null });
    await setSla(x, c, { ...NO_RESPONSE_TARGET, ...(missed && { sla_breached: true }) }, s, at);
  }
  await addFacts(x, facts);
}

/** A conversation's status was set (`at`, ISO): a close ends its open period, leaving closed reopens it. */
export async function conversationStatusSet(x: Executor, id: string, status: string, at: string): Promise<void> {
  const both = await conversationAndState(x, id);
  if (both === undefined) return;
  const { c, s } = both;
  const when = ms(at);
  const r = await rulesOf(x);
  if (status !== 'closed') {
    if (s === undefined || s.closed === 1) await open(x, r, c, when, s);
    return;
  }
  if (s === undefined || s.closed === 1) return;
  const openedAt = num(s.opened_at)!;
  await addFacts(x, [fact(c, 'resolution', when, span(r, openedAt, when))]);
  const resolution = await endTarget(x, c, 'resolution', c.resolutionDue, when, true);
  if (c.target !== null) await endTarget(x, c, c.target, c.responseDue, when, false);
  await setState(x, id, { closed: 1, wait_at: null });
  await setSla(
    x,
    c,
    {
      ...NO_RESPONSE_TARGET,
      sla_resolution_due: null,
      sla_resolution_risk: null,
      ...(resolution.missed && { sla_breached: true }),
    },
    s,
    when,
  );
}

interface TaskWritten {
  id: string;
  status: string;
  priority: string;
  department: string;
  assignee: string | null;
  conversationId: string | null;
  dueAt: string | null;
  completedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The overdue fact a task should have: at its deadline unless done by then or cancelled. */
const overdueAt = (deadline: number | null, status: string, completedAt: number | null) =>
  deadline === null || status === 'cancelled' || (completedAt !== null && completedAt <= deadline) ? null : deadline;

/** A task was created (`before` null) or changed; returns its deadline (ISO), also kept in its row. */
export async function taskWritten(x: Executor, before: TaskWritten | null, t: TaskWritten): Promise<string | null> {
  const r = await rulesOf(x);
  const conversation = t.conversationId === null ? undefined : await conversationNow(x, t.conversationId);
  const base = { channel: conversation?.channel ?? '', assignee: t.assignee ?? '', department: t.department };
  const created = ms(t.createdAt);
  const s = await x.first(reportTask, { id: t.id });
  const dueAt = t.dueAt === null ? null : ms(t.dueAt);
  // Without a dueAt the deadline is fixed when the task starts (a later sla change applies to later tasks).
  const deadline =
    dueAt ??
    (s !== undefined && before?.dueAt == null
      ? num(s.deadline)
      : taskDeadline(r.sla, r.hours, { createdAt: created, dueAt, priority: t.priority }));
  const completedAt = t.completedAt === null ? null : ms(t.completedAt);
  const facts: Fact[] = [];
  if (s === undefined) {
    await rdb(x)
      .insertInto('report_tasks')
      .values({ id: t.id, created_at: created, deadline, completed_at: completedAt, status: t.status })
      .execute();
    if (before === null) facts.push({ metric: 'task_created', at: created, ...base });
  } else {
    await updateRowById(x, 'report_tasks', t.id, { deadline, completed_at: completedAt, status: t.status });
  }
  if (t.status === 'completed' && before !== null && before.status !== 'completed' && completedAt !== null) {
    facts.push({ metric: 'task_completed', at: completedAt, ...base, ...span(r, created, completedAt) });
    if (deadline !== null && completedAt <= deadline) facts.push({ metric: 'sla_tasks_met', at: completedAt, ...base });
  }
  const was = s === undefined ? null : overdueAt(num(s.deadline), s.status, num(s.completed_at));
  const now = overdueAt(deadline, t.status, completedAt);
  if (s === undefined || was !== now || before?.assignee !== t.assignee || before?.department !== t.department) {
    if (s !== undefined) await retractFacts(x, t.id, ['task_overdue']);
    if (now !== null) facts.push({ metric: 'task_overdue', at: now, ...base, ref: t.id });
  }
  await addFacts(x, facts);
  // Its overdue job moves only when the deadline or whether the task is done changed.
  const reported = num(s?.overdue_reported);
  const at = overdueMoment(deadline, t.status, reported);
  if (s === undefined ? at !== null : overdueMoment(num(s.deadline), s.status, reported) !== at) {
    await scheduleTaskOverdue(x, t.id, at);
  }
  const iso = isoOrNull(deadline);
  if (s === undefined || num(s.deadline) !== deadline) {
    await updateRowById(x, 'tasks', t.id, { deadline: iso });
  }
  return iso;
}
