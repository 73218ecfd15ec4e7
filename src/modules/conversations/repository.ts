// Owns conversation rows: reads (joined with the guest's name), writes, and the row-to-API mapping;
// also the two lookups a conversation's references are checked with (guest, active staff).
import { type ExpressionBuilder, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { paginate } from '../../db/paginate.js';
import { type Param, type Prepared, prepared, updateById } from '../../db/prepared.js';
import { fromJson, nowIso, toBool, toIso } from '../../db/store.js';
import type { ConversationRow, Database, Executor } from '../../db/types.js';
import { conversationOpening, conversationStatusSet, type Opened, type WrittenSla } from '../reports/recorder.js';
import { type SLA_COLUMNS, slaView } from '../reports/sla.js';
import { currentStay } from '../stays/current.js';
import type { StaySummaryView } from '../stays/schemas.js';
import type { ConversationStatus, ConversationView } from './schemas.js';

/** The columns every conversation read selects (lists by label included). */
export const COLUMNS = [
  'c.id',
  'c.guest_id',
  'g.name as guest_name',
  'c.channel',
  'c.status',
  'c.assignee',
  'c.subject',
  'c.last_message_at',
  'c.message_count',
  'c.labels',
  'c.created_at',
  'c.updated_at',
  'c.snoozed_until',
  'c.sla_target',
  'c.sla_response_due',
  'c.sla_response_risk',
  'c.sla_resolution_due',
  'c.sla_resolution_risk',
  'c.sla_breached',
] as const;

/**
 * A list row: the conversation as the API answers it (toConversation's fields), written as JSON by
 * the store in the page's own statement, with its order values for the cursor. The page's current
 * stays and SLA views are part of that statement, so a page is one statement and no row is built
 * in JavaScript (docs/performance.md, §6).
 */
export interface ConversationJsonRow {
  json: string;
  last_message_at: string | Date;
  id: string;
}

/** A timestamp column as the API writes it: ISO 8601 in UTC, milliseconds (as toIso gives). */
const isoPg = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * toConversation in SQL, per dialect. `today` (the hotel's day) picks the current stay as
 * src/modules/stays/current.ts does: in house first, else the booked stay with the earliest checkIn
 * ending after today; one index seek on stays_guest_idx per row. `now` (ISO) sets the SLA status
 * as slaView does. Timestamps are stored as ISO text on SQLite and written so on PostgreSQL.
 */
function conversationJson(dialect: 'sqlite' | 'postgres', p: (name: string) => never): RawBuilder<string> {
  const pg = dialect === 'postgres';
  const obj = pg ? 'json_build_object' : 'json_object';
  const iso = pg ? isoPg : (column: string) => column;
  // SQLite keeps a value's JSON-ness only when it comes straight from a JSON function: json() on a
  // subquery's or a CASE's result nests it as an object rather than as a string.
  const nested = pg ? (e: string) => e : (e: string) => `json(${e})`;
  const now = pg ? sql`cast(${p('now')} as timestamptz)` : sql`${p('now')}`;
  const breached = pg ? 'c.sla_breached' : 'c.sla_breached <> 0';
  // The status as an expression no index holds (`+s.status`, `s.status || ''`), so the guest's own
  // stays are read by guest and then tested: otherwise stays_status_idx (every booked stay) is
  // weighed against them, and PostgreSQL, its statistics behind a burst of new stays, read both
  // and intersected them for every row of the page (docs/stays.md, At scale).
  const status = pg ? "(s.status || '')" : '+s.status';
  // One line of SQL (each line ends in a continuation), as the checked-in files show statements.
  return sql<string>`${sql.raw(obj)}('id', c.id, 'guestId', c.guest_id, 'guest', ${sql.raw(obj)}('id', c.guest_id, 'name', g.name),\
 'channel', c.channel, 'status', c.status, 'assignee', c.assignee, 'subject', c.subject,\
 'lastMessageAt', ${sql.raw(iso('c.last_message_at'))}, 'messageCount', c.message_count,\
 'labels', ${sql.raw(nested('c.labels'))},\
 'stay', ${sql.raw(pg ? '(' : 'json((')}select ${sql.raw(obj)}('id', s.id, 'room', s.room, 'checkIn', s.check_in, 'checkOut', s.check_out, 'status', s.status)\
 from stays as s where s.guest_id = c.guest_id and (${sql.raw(status)} = 'in_house' or (${sql.raw(status)} = 'booked' and s.check_out > ${p('today')}))\
 order by s.status = 'in_house' desc, s.check_in, s.id limit 1${sql.raw(pg ? ')' : '))')},\
 'sla', ${sql.raw(pg ? '' : 'json(')}case when c.sla_response_due is null and c.sla_resolution_due is null and not (${sql.raw(breached)}) then null\
 else ${sql.raw(obj)}('firstResponseDueAt', case when c.sla_target = 'first_response' then ${sql.raw(iso('c.sla_response_due'))} end,\
 'nextResponseDueAt', case when c.sla_target = 'next_response' then ${sql.raw(iso('c.sla_response_due'))} end,\
 'resolutionDueAt', ${sql.raw(iso('c.sla_resolution_due'))},\
 'status', case when ${sql.raw(breached)} or c.sla_response_due <= ${now} or c.sla_resolution_due <= ${now} then 'breached'\
 when c.sla_response_risk <= ${now} or c.sla_resolution_risk <= ${now} then 'at_risk' else 'ok' end) end${sql.raw(pg ? '' : ')')},\
 'createdAt', ${sql.raw(iso('c.created_at'))}, 'updatedAt', ${sql.raw(iso('c.updated_at'))},\
 'snoozedUntil', ${sql.raw(iso('c.snoozed_until'))})`;
}

/** `stay` is added for a page at once (src/modules/stays/current.ts), never per row. */
export type ConversationListRow = ConversationRow & { guest_name: string; stay?: StaySummaryView };

export function toConversation(row: ConversationListRow): ConversationView {
  return {
    id: row.id,
    guestId: row.guest_id,
    guest: { id: row.guest_id, name: row.guest_name },
    channel: row.channel,
    status: row.status,
    assignee: row.assignee,
    subject: row.subject,
    lastMessageAt: toIso(row.last_message_at),
    messageCount: Number(row.message_count),
    labels: fromJson<string[]>(row.labels),
    stay: row.stay ?? null,
    sla: slaView(row),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    snoozedUntil: row.snoozed_until === null ? null : toIso(row.snoozed_until),
  };
}

const conversationById = prepared((db, p: Param<{ id: string }>) =>
  db
    .selectFrom('conversations as c')
    .innerJoin('guests as g', 'g.id', 'c.guest_id')
    .select(COLUMNS)
    .where('c.id', '=', p('id')),
);

export async function findConversation(db: Executor, id: string): Promise<ConversationView | undefined> {
  const row = await db.first(conversationById, { id });
  return row && toConversation({ ...row, stay: await currentStay(db, row.guest_id) });
}

const conversationRef = prepared((db, p: Param<{ id: string }>) =>
  db.selectFrom('conversations').select(['id', 'guest_id', 'status', 'assignee', 'channel']).where('id', '=', p('id')),
);

/** The columns access checks and message writes need, without the join. */
export function findConversationRef(db: Executor, id: string) {
  return db.first(conversationRef, { id });
}

export interface ConversationFilter {
  status?: ConversationStatus;
  channel?: ConversationRow['channel'];
  /** A staff id, or null for conversations without an assignee. */
  assignee?: string | null;
  /** A staff-role caller's own id: ANDed with every other filter. */
  onlyAssignee?: string;
  /** Only those whose SLA status is this at `now` (ISO): read from the indexed due columns. */
  sla?: { status: 'at_risk' | 'breached'; now: string };
}

/** A list's filter and the moment its rows are shown at: `now` (ISO) for SLA views, `today` for stays. */
export interface ConversationListFilter extends ConversationFilter {
  now: string;
  /** The hotel's today (YYYY-MM-DD, src/modules/stays/dates.ts). */
  today: string;
}

/** `q` narrowed to the conversations whose SLA status is f.sla.status at f.sla.now (src/modules/reports/sla.ts). */
// biome-ignore lint/suspicious/noExplicitAny: applied to the list's builder and to its count's alike.
function whereSla<Q extends SelectQueryBuilder<any, any, any>>(
  q: Q,
  status: 'at_risk' | 'breached',
  p: (n: string) => never,
): Q {
  return q.where((eb) => {
    const breached = eb.or([
      eb('c.sla_breached', '=', toBool(true)),
      eb('c.sla_response_due', '<=', p('slaNow')),
      eb('c.sla_resolution_due', '<=', p('slaNow')),
    ]);
    if (status === 'breached') return breached;
    return eb.and([
      eb.not(breached),
      eb.or([eb('c.sla_response_risk', '<=', p('slaNow')), eb('c.sla_resolution_risk', '<=', p('slaNow'))]),
    ]);
  }) as Q;
}

/** The filters a query shape has: each present or not, the assignee also "is null". */
const shapeOf = (f: ConversationFilter): string =>
  [
    f.status !== undefined,
    f.channel !== undefined,
    f.assignee === undefined ? 'any' : f.assignee === null ? 'none' : 'one',
    f.onlyAssignee !== undefined,
    f.sla?.status ?? '',
  ].join();

/** Conversations, latest activity first (lastMessageAt newest first, then id), each row its JSON. */
export const listConversations = paginate<ConversationListFilter, ConversationJsonRow>({
  name: 'conversations',
  from: (db) => db.selectFrom('conversations as c'),
  where(q, f, p) {
    if (f.status !== undefined) q = q.where('c.status', '=', p('status'));
    if (f.channel !== undefined) q = q.where('c.channel', '=', p('channel'));
    if (f.assignee === null) q = q.where('c.assignee', 'is', null);
    else if (f.assignee !== undefined) q = q.where('c.assignee', '=', p('assignee'));
    if (f.onlyAssignee !== undefined) q = q.where('c.assignee', '=', p('onlyAssignee'));
    if (f.sla !== undefined) q = whereSla(q, f.sla.status, p);
    return q;
  },
  columns: (q, p, dialect) =>
    q
      .innerJoin('guests as g', 'g.id', 'c.guest_id')
      .select([conversationJson(dialect, p).as('json'), 'c.last_message_at', 'c.id']),
  order: ['c.last_message_at', 'c.id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.last_message_at), row.id],
  /**
   * Summed from conversation_counts (kept exact by triggers, migration 002): at most a few hundred
   * rows whatever the table's size, where a count(*) grows with it. Same filters, on the count keys.
   */
  count(x, f, p) {
    if (f.sla !== undefined) {
      // No kept count follows a status that changes with the clock: counted from the due indexes.
      let c = x.selectFrom('conversations as c').select((eb) => eb.fn.countAll<number>().as('n'));
      if (f.status !== undefined) c = c.where('c.status', '=', p('status'));
      if (f.channel !== undefined) c = c.where('c.channel', '=', p('channel'));
      if (f.assignee === null) c = c.where('c.assignee', 'is', null);
      else if (f.assignee !== undefined) c = c.where('c.assignee', '=', p('assignee'));
      if (f.onlyAssignee !== undefined) c = c.where('c.assignee', '=', p('onlyAssignee'));
      return whereSla(c, f.sla.status, p);
    }
    let q = x
      .selectFrom('conversation_counts')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));
    if (f.status !== undefined) q = q.where('status', '=', p('status'));
    if (f.channel !== undefined) q = q.where('channel', '=', p('channel'));
    if (f.assignee === null) q = q.where('assignee_key', '=', '');
    else if (f.assignee !== undefined) q = q.where('assignee_key', '=', p('assignee'));
    if (f.onlyAssignee !== undefined) q = q.where('assignee_key', '=', p('onlyAssignee'));
    return q;
  },
  shapeOf,
  values: (f) => ({
    status: f.status,
    channel: f.channel,
    assignee: f.assignee ?? null,
    onlyAssignee: f.onlyAssignee,
    slaNow: f.sla?.now,
    now: f.now,
    today: f.today,
  }),
});

/** A row's JSON holds an SLA object (not `"sla":null`); strings inside it escape their quotes. */
const SLA_OBJECT = /"sla"\s*:\s*\{/;

/**
 * The first SLA moment (a running target's at-risk or due time, epoch ms) after `at` among the
 * list rows, or Infinity: until then their SLA views read as they did at `at`. Rows whose `sla` is
 * null have no such moment.
 */
export async function nextSlaMoment(db: Executor, rows: readonly ConversationJsonRow[], at: number): Promise<number> {
  const ids = rows.filter((r) => SLA_OBJECT.test(r.json)).map((r) => r.id);
  if (ids.length === 0) return Infinity;
  const found = await db
    .selectFrom('conversations')
    .select(['sla_response_due', 'sla_response_risk', 'sla_resolution_due', 'sla_resolution_risk'])
    .where('id', 'in', ids)
    .execute();
  let next = Infinity;
  for (const r of found) {
    for (const v of [r.sla_response_due, r.sla_response_risk, r.sla_resolution_due, r.sla_resolution_risk]) {
      if (v === null || v === undefined) continue;
      const t = Date.parse(toIso(v));
      if (t > at && t < next) next = t;
    }
  }
  return next;
}

export interface NewConversation {
  id: string;
  guestId: string;
  channel: ConversationRow['channel'];
  subject: string | null;
  assignee: string | null;
  messageCount: number;
  /** Creation time, also the last message time (the first message, if any, is created with it). */
  at: string;
}

/** The columns a new conversation is written with (its labels and snooze at their defaults; its SLA columns apart). */
const newRow = (c: NewConversation) => ({
  id: c.id,
  guest_id: c.guestId,
  channel: c.channel,
  status: 'open' as const,
  assignee: c.assignee,
  subject: c.subject,
  last_message_at: c.at,
  message_count: c.messageCount,
  created_at: c.at,
  updated_at: c.at,
});

/**
 * Inserts the conversation with its running SLA targets (one statement), and reports count its
 * opening in the same transaction (docs/reports.md); gives it as its opening left it (for its
 * view and first message without a read).
 */
export async function insertConversation(db: Executor, c: NewConversation): Promise<Opened> {
  const opening = await conversationOpening(db, c, c.at);
  await db
    .insertInto('conversations')
    .values({ ...newRow(c), ...opening.columns })
    .execute();
  return opening.opened();
}

/**
 * The view of a conversation insertConversation just wrote, with no other write to it since, as
 * findConversation would read it: `guestName` and `stay` (the guest's current stay) as the caller
 * knows them, `sla` the columns its opening wrote.
 */
export function newConversationView(
  c: NewConversation,
  guestName: string,
  stay: StaySummaryView,
  sla: WrittenSla,
): ConversationView {
  return toConversation({
    ...newRow(c),
    guest_name: guestName,
    labels: '[]',
    snoozed_until: null,
    ...(sla as Pick<ConversationRow, (typeof SLA_COLUMNS)[number]>),
    sla_breached: sla.sla_breached,
    stay,
  } as ConversationListRow);
}

export async function updateConversationRow(
  db: Executor,
  id: string,
  c: { status?: ConversationStatus; assignee?: string | null; snoozedUntil?: string | null },
  at: string,
): Promise<void> {
  await updateById(db, 'conversations', id, {
    ...(c.status !== undefined && { status: c.status }),
    ...(c.assignee !== undefined && { assignee: c.assignee }),
    ...(c.snoozedUntil !== undefined && { snoozed_until: c.snoozedUntil }),
    updated_at: at,
  });
  if (c.status !== undefined) await conversationStatusSet(db, id, c.status, at);
}

/** What a new message changes in its conversation's row: one more message, activity at `at`. */
function touched(
  eb: ExpressionBuilder<Database, 'conversations'>,
  at: string | RawBuilder<string>,
  reopenClosed: boolean,
) {
  return {
    last_message_at: at,
    message_count: eb('message_count', '+', 1),
    updated_at: at,
    // A guest writing reopens a closed conversation and wakes a snoozed one (docs/jobs.md).
    ...(reopenClosed && {
      status: eb
        .case()
        .when(eb.or([eb('status', '=', 'closed'), eb('snoozed_until', 'is not', null)]))
        .then('open')
        .else(eb.ref('status'))
        .end()
        .$castTo<ConversationStatus>(),
      snoozed_until: null,
    }),
  };
}

/**
 * Records that a message arrived at `at`: one more message, latest activity now. `reopenClosed`
 * turns a closed conversation open; decided in the statement so a concurrent status change
 * between reading and writing cannot be overwritten with a stale decision.
 */
const touch = [false, true].map((reopenClosed) =>
  prepared((db, p: Param<{ id: string; at: string }>) =>
    db
      .updateTable('conversations')
      .set((eb) => touched(eb, p('at'), reopenClosed))
      .where('id', '=', p('id')),
  ),
) as [Prepared<{ id: string; at: string }, unknown>, Prepared<{ id: string; at: string }, unknown>];

/**
 * Takes the time of a new message of a conversation and records it there in one statement: one
 * more message, latest activity at that time, and (with `reopenClosed`) a closed conversation
 * open again. The time is now, or 1 ms after the conversation's latest message when that is not
 * earlier (another instance's clock a little ahead), so its messages keep the order they were
 * written in. The update holds the row's lock until commit (PostgreSQL; SQLite has one writer),
 * so texts of one conversation commit in the order of their times, which is the order they are
 * sent in. Undefined when there is no such conversation.
 */
const advance = [false, true].map((reopenClosed) =>
  prepared((db, p: Param<{ id: string; now: string }>) => {
    const next =
      db.dialect === 'sqlite'
        ? sql<string>`case when ${p('now')} > last_message_at then ${p('now')} else strftime('%Y-%m-%dT%H:%M:%fZ', last_message_at, '+0.001 seconds') end`
        : sql<string>`case when cast(${p('now')} as timestamptz) > last_message_at then cast(${p('now')} as timestamptz) else last_message_at + interval '1 millisecond' end`;
    return db
      .updateTable('conversations')
      .set((eb) => touched(eb, next, reopenClosed))
      .where('id', '=', p('id'))
      .returning(['id', 'guest_id', 'status', 'assignee', 'channel', 'last_message_at']);
  }),
);

export async function advanceConversation(
  db: Executor,
  id: string,
  reopenClosed: boolean,
): Promise<string | undefined> {
  const row = (await db.first(advance[reopenClosed ? 1 : 0]!, { id, now: nowIso() })) as
    | { last_message_at: string | Date }
    | undefined;
  return row && toIso(row.last_message_at);
}

/**
 * The guest's latest conversation, on `channel` or (undefined) on any: the latest message first,
 * then the newest conversation, then the highest id. Read through the guest's index and picked
 * here: a guest has few conversations, while with ORDER BY last_message_at … LIMIT 1 a SQLite store
 * without ANALYZE statistics walks the (channel, last_message_at) index instead, every conversation
 * of the channel for a guest who has none there. Inbound messages and journey steps both use it.
 */
export async function latestConversationOf(db: Executor, guestId: string, channel?: string) {
  let q = db
    .selectFrom('conversations')
    .select(['id', 'channel', 'status', 'last_message_at', 'created_at'])
    .where('guest_id', '=', guestId);
  if (channel !== undefined) q = q.where('channel', '=', channel as never);
  return latestAmong((await q.execute()).map(conversationOfGuest));
}

/** A guest's conversation as latestAmong compares them. */
export interface GuestConversation {
  id: string;
  channel: string;
  status: ConversationStatus;
  /** Its latest message's time, then its creation time (ISO). */
  at: string;
  created: string;
}

const conversationOfGuest = (r: {
  id: string;
  channel: string;
  status: ConversationStatus;
  last_message_at: string | Date;
  created_at: string | Date;
}): GuestConversation => ({
  id: r.id,
  channel: r.channel,
  status: r.status,
  at: toIso(r.last_message_at),
  created: toIso(r.created_at),
});

/** The latest of a guest's conversations (on `channel`, or on any), as latestConversationOf picks it. */
export function latestAmong(conversations: readonly GuestConversation[], channel?: string) {
  let latest: GuestConversation | undefined;
  for (const c of conversations) {
    if (channel !== undefined && c.channel !== channel) continue;
    if (
      latest === undefined ||
      c.at > latest.at ||
      (c.at === latest.at && (c.created > latest.created || (c.created === latest.created && c.id > latest.id)))
    ) {
      latest = c;
    }
  }
  return latest;
}

const guestsConversationsPg = prepared((db, p: Param<{ ids: readonly string[] }>) =>
  db
    .selectFrom('conversations')
    .select(['id', 'guest_id', 'channel', 'status', 'last_message_at', 'created_at'])
    .where(sql<boolean>`guest_id = any(${p('ids')}::text[])`),
);
const guestsConversationsSqlite = prepared((db, p: Param<{ ids: string }>) =>
  db
    .selectFrom('conversations')
    .select(['id', 'guest_id', 'channel', 'status', 'last_message_at', 'created_at'])
    .where(sql<boolean>`guest_id in (select value from json_each(${p('ids')}))`),
);

/** Every conversation of these guests, by guest, in one statement (each through the guest's index). */
export async function conversationsOfGuests(
  db: Executor,
  guestIds: readonly string[],
): Promise<Map<string, GuestConversation[]>> {
  const ids = [...new Set(guestIds)];
  const out = new Map<string, GuestConversation[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const rows =
    db.dialect === 'postgres'
      ? await db.run(guestsConversationsPg, { ids })
      : await db.run(guestsConversationsSqlite, { ids: JSON.stringify(ids) });
  for (const r of rows) out.get(r.guest_id)?.push(conversationOfGuest(r));
  return out;
}

/**
 * advanceConversation for a new outbound message: the conversation's reference (as
 * findConversationRef reads it) with the time taken, from the same statement, or undefined when
 * it does not exist.
 */
export async function advanceConversationRef(db: Executor, id: string) {
  const row = await db.first(advance[0]!, { id, now: nowIso() });
  return row && { ...row, last_message_at: toIso(row.last_message_at) };
}

export async function touchConversation(db: Executor, id: string, at: string, reopenClosed: boolean): Promise<void> {
  await db.run(touch[reopenClosed ? 1 : 0], { id, at });
}

export function findGuestName(db: Executor, id: string) {
  return db.selectFrom('guests').select(['id', 'name', 'email', 'phone']).where('id', '=', id).executeTakeFirst();
}

export async function isActiveStaff(db: Executor, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('staff')
    .select('id')
    .where('id', '=', id)
    .where('active', '=', toBool(true))
    .executeTakeFirst();
  return row !== undefined;
}
