// Owns running journeys (docs/stays.md, Journeys): each step of a stay is a row of journey_steps
// and, while scheduled, one job keyed by stay and journey (docs/jobs.md), both written in the
// transaction of the change that planned it (a stay written, or the setting saved: then every
// current and coming stay is planned again by one job, in batches). At its moment the job sends the
// message or opens the task, records the step done and completes itself in one transaction:
// exactly once per stay and journey, across instances and restarts. A step of a cancelled or
// no-show stay is skipped at its moment; a step more than 6 h late is skipped with its reason.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { CompiledQuery } from 'kysely';
import { type Param, type Prepared, prepared } from '../../db/prepared.js';
import { fromJson, isConflict, nowIso, type Store, toIso } from '../../db/store.js';
import type { CommitTotal, Executor, JourneyStepTable, Tx } from '../../db/types.js';
import { AppError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { fillPlaceholders, firstNameOf } from '../canned-responses/placeholders.js';
import { assertWhatsAppWindow, type RenderedTemplate, renderTemplate } from '../channels/rules.js';
import type { LocalSender } from '../channels/sends-repository.js';
import {
  advanceConversationRef,
  conversationsOfGuests,
  type GuestConversation,
  insertConversation,
  latestAmong,
  type NewConversation,
  newConversationView,
} from '../conversations/repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { storeOutbound } from '../conversations/service.js';
import { conversationEvents, messageCreated, SYSTEM, taskEvents } from '../events/emit.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import { cancelJob, insertJob } from '../jobs/repository.js';
import {
  type BatchOutcome,
  type BatchRun,
  type CompleteRuns,
  type JobHandler,
  type JobRunner,
  LeaseLost,
} from '../jobs/runner.js';
import type { Opened } from '../reports/recorder.js';
import { SETTINGS } from '../settings/registry.js';
import { getSetting } from '../settings/repository.js';
import { insertTask } from '../tasks/repository.js';
import { currentStays } from './current.js';
import { type HotelClock, hotelClock } from './dates.js';
import { type Journey, type JourneyEvent, planStay, REPLAN_KIND } from './journeys.js';
import type { StaySummaryView } from './schemas.js';

/** The job that runs one step; its key is the stay's id and the journey's name. */
export const STEP_KIND = 'journey.step';
/** A step found this late (when planned, or when its job runs after downtime) is skipped. */
export const LATE_LIMIT_MS = 6 * 3_600_000;
/** Stays planned per transaction when the setting changes: short write locks, bounded memory. */
const REPLAN_BATCH = 200;
/** A step may be due this long after its stay's departure (the largest offset): older stays are not replanned. */
const REPLAN_DAYS_BACK = 31;

/** What a job writer needs: this instance's runner (woken at commit), or none (found by the poll). */
export type Jobs = Pick<JobRunner, 'enqueue'> | null;

export type StepStatus = JourneyStepTable['status'];

/** A step as GET /stays/:id/journey and the journey events show it. */
export interface JourneyStepView {
  stayId: string;
  guestId: string;
  journey: string;
  event: JourneyEvent;
  dueAt: string;
  status: StepStatus;
  messageId: string | null;
  taskId: string | null;
  reason: string | null;
}

const stepKey = (stayId: string, journey: string) => `${stayId}:${journey}`;

/** What planning a stay needs of it. */
interface PlannedStay {
  id: string;
  guest_id: string;
  check_in: string;
  check_out: string;
  status: string;
  room: string | null;
  checked_in_at: string | Date | null;
  checked_out_at: string | Date | null;
}

const PLAN_COLUMNS = [
  'id',
  'guest_id',
  'check_in',
  'check_out',
  'status',
  'room',
  'checked_in_at',
  'checked_out_at',
] as const;

/** The stay as planning reads it; `lock`: held until commit (PostgreSQL), as a write to it holds it. */
function readStay(db: Executor, id: string, lock = false): Promise<PlannedStay | undefined> {
  const q = db.selectFrom('stays').select(PLAN_COLUMNS).where('id', '=', id);
  return (lock && db.dialect === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
}

/**
 * The steps of a batch (`n` of them, by stay and journey: inputs s0, j0, s1, j1, …) with their stays
 * and guests, in one statement. On PostgreSQL the steps' rows and the guests' are locked until
 * commit, in guest order (two batches sharing a guest lock in the same order): a plan of a stay
 * meanwhile waits and then finds its step ran, and steps of one guest's stays due together take
 * turns, each seeing the conversation the one before opened (sendStepMessage).
 */
function stepsToRun(n: number) {
  let q = stepsToRunOf.get(n);
  if (q === undefined) {
    q = prepared((db, p: Param<Record<string, string>>) => stepsRead(db, n, p));
    stepsToRunOf.set(n, q);
  }
  return q;
}

function stepsRead(db: Executor, n: number, p: Param<Record<string, string>>) {
  const q = db
    .selectFrom('journey_steps as js')
    .innerJoin('stays as s', 's.id', 'js.stay_id')
    .innerJoin('guests as g', 'g.id', 's.guest_id')
    .selectAll('js')
    .select([
      's.guest_id',
      's.check_in',
      's.check_out',
      's.status as stay_status',
      's.room',
      'g.name as guest_name',
      'g.email as guest_email',
      'g.phone as guest_phone',
    ])
    .where((eb) =>
      eb.or(
        Array.from({ length: n }, (_, i) =>
          eb.and([eb('js.stay_id', '=', p(`s${i}`)), eb('js.journey', '=', p(`j${i}`))]),
        ),
      ),
    )
    .orderBy('g.id')
    .orderBy('js.stay_id')
    .orderBy('js.journey');
  return db.dialect === 'postgres' ? q.forUpdate(['js', 'g']) : q;
}

/** One statement per batch size (at most the batch's `max`). */
const stepsToRunOf = new Map<number, Prepared<Record<string, string>, StepToRun>>();

type StepToRun = JourneyStepTable & {
  guest_id: string;
  check_in: string;
  check_out: string;
  stay_status: string;
  room: string | null;
  guest_name: string;
  guest_email: string | null;
  guest_phone: string | null;
};

function splitStep(r: StepToRun) {
  const { guest_id, check_in, check_out, stay_status, room, guest_name, guest_email, guest_phone, ...row } = r;
  return {
    row: row as JourneyStepTable,
    stay: { guest_id, check_in, check_out, status: stay_status, room },
    guest: { id: guest_id, name: guest_name, email: guest_email, phone: guest_phone } as Guest,
  };
}

/** The two settings a step reads (the journeys and the hotel's name), in one statement. */
const stepSettings = prepared((db) =>
  db.selectFrom('settings').select(['key', 'value']).where('key', 'in', ['journeys', 'hotel']),
);

/** A setting's value among `rows`, else its default. */
function settingValue(rows: { key: string; value: unknown }[], key: string): unknown {
  const row = rows.find((r) => r.key === key);
  return row === undefined ? structuredClone(SETTINGS[key]?.default) : fromJson(row.value);
}

/** The journeys setting as saved (none: no journeys). */
export async function readJourneys(db: Executor): Promise<Journey[]> {
  return ((await getSetting(db, 'journeys'))?.value ?? []) as Journey[];
}

export interface PlanContext {
  journeys: Journey[];
  clock: HotelClock;
}

function stepView(row: JourneyStepTable, guestId: string): JourneyStepView {
  return {
    stayId: row.stay_id,
    guestId,
    journey: row.journey,
    event: row.event,
    dueAt: toIso(row.due_at),
    status: row.status,
    messageId: row.message_id,
    taskId: row.task_id,
    reason: row.reason,
  };
}

/** A step done, or not carried out: skipped, or failed (its `status` and `reason` say which and why). */
function stepEvent(outbox: Outbox, step: JourneyStepView): void {
  outbox.add({
    type: step.status === 'done' ? 'journey.step_done' : 'journey.step_skipped',
    actor: SYSTEM,
    data: step,
  });
}

/** A stay has at most 50 journeys' steps, more only when journeys that already ran were replaced. */
export const MAX_STEPS_LISTED = 1000;

/** The steps of a stay, in due order (then journey). */
export async function listSteps(db: Executor, stayId: string, guestId: string): Promise<JourneyStepView[]> {
  const rows = await db
    .selectFrom('journey_steps')
    .selectAll()
    .where('stay_id', '=', stayId)
    .orderBy('due_at')
    .orderBy('journey')
    .limit(MAX_STEPS_LISTED)
    .execute();
  return rows.map((r) => stepView(r, guestId));
}

/**
 * Records, after a write to the stay in `tx`, the moments its status became in_house or
 * checked_out (the check_in and check_out events).
 */
export async function markStatusMoment(tx: Tx, id: string, before: string | null, after: string): Promise<void> {
  if (before === after) return;
  if (after === 'in_house')
    await tx.updateTable('stays').set({ checked_in_at: nowIso() }).where('id', '=', id).execute();
  if (after === 'checked_out') {
    await tx.updateTable('stays').set({ checked_out_at: nowIso() }).where('id', '=', id).execute();
  }
}

/**
 * Plans the stay's steps in `tx`, after its row was written: each planned step not yet run is
 * (re)scheduled at its moment, or skipped when that moment is more than 6 h gone; a scheduled
 * step whose journey is gone (removed or disabled) is dropped with its job. Steps that ran
 * (done, skipped, failed) are left as they are: a step runs once per stay and journey.
 */
export async function planJourneys(
  tx: Tx,
  outbox: Outbox,
  jobs: Jobs,
  stayId: string,
  context?: PlanContext,
): Promise<void> {
  const journeys = context?.journeys ?? (await readJourneys(tx));
  // The stay's row first, locked (a write to the stay holds it already): two plans of one stay (a
  // PATCH and the replan after a save) take turns, the second seeing the steps the first wrote.
  const stay = await readStay(tx, stayId, true);
  if (stay === undefined) return;
  const existing = await tx.selectFrom('journey_steps').selectAll().where('stay_id', '=', stayId).execute();
  if (journeys.length === 0 && existing.length === 0) return;
  const clock = context?.clock ?? (await hotelClock(tx));
  const plan = planStay(
    {
      checkIn: stay.check_in,
      checkOut: stay.check_out,
      checkedInAt: stay.checked_in_at === null ? null : toIso(stay.checked_in_at),
      checkedOutAt: stay.checked_out_at === null ? null : toIso(stay.checked_out_at),
    },
    journeys,
    clock,
  );
  const byJourney = new Map(existing.map((r) => [r.journey, r]));
  const now = Date.now();
  const at = new Date(now).toISOString();
  for (const p of plan) {
    const row = byJourney.get(p.journey);
    byJourney.delete(p.journey);
    if (row !== undefined && (row.status !== 'scheduled' || toIso(row.due_at) === p.dueAt)) continue;
    const late = now - Date.parse(p.dueAt) > LATE_LIMIT_MS;
    const values = {
      event: p.event,
      due_at: p.dueAt,
      status: late ? ('skipped' as const) : ('scheduled' as const),
      reason: late ? 'more than 6 h late when it was scheduled' : null,
      updated_at: at,
    };
    if (row === undefined) {
      await tx
        .insertInto('journey_steps')
        .values({ stay_id: stayId, journey: p.journey, message_id: null, task_id: null, created_at: at, ...values })
        .execute();
    } else {
      // Only while still scheduled: a step that ran meanwhile (its run held the row, PostgreSQL)
      // is not planned again.
      const r = await tx
        .updateTable('journey_steps')
        .set(values)
        .where('stay_id', '=', stayId)
        .where('journey', '=', p.journey)
        .where('status', '=', 'scheduled')
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) continue;
    }
    const key = stepKey(stayId, p.journey);
    if (late) {
      if (row !== undefined) await cancelJob(tx, STEP_KIND, key);
      stepEvent(outbox, {
        stayId,
        guestId: stay.guest_id,
        journey: p.journey,
        event: p.event,
        dueAt: p.dueAt,
        status: 'skipped',
        messageId: null,
        taskId: null,
        reason: values.reason,
      });
      continue;
    }
    // A moment already passed (at most 6 h) is due now: the job runs at once.
    const job = { kind: STEP_KIND, key, runAt: p.dueAt, payload: { stayId, journey: p.journey } };
    if (jobs !== null) await jobs.enqueue(tx, job);
    else await insertJob(tx, job);
  }
  // Scheduled steps of journeys no longer planned: their journey was removed or disabled.
  for (const row of byJourney.values()) {
    if (row.status !== 'scheduled') continue;
    const r = await tx
      .deleteFrom('journey_steps')
      .where('stay_id', '=', stayId)
      .where('journey', '=', row.journey)
      .where('status', '=', 'scheduled')
      .executeTakeFirst();
    if (Number(r.numDeletedRows) > 0) await cancelJob(tx, STEP_KIND, stepKey(stayId, row.journey));
  }
}

// --- Running a step ------------------------------------------------------------------------

/** Why the step cannot be carried out as it stands (recorded as failed, not retried). */
class StepFailure extends Error {}

const CHANNEL_ORDER = ['whatsapp', 'sms', 'email'] as const;

interface Guest {
  id: string;
  name: string;
  email: string | null;
  phone: string | null;
}

const reachable = (channel: string, g: Guest) =>
  channel === 'email' ? g.email !== null : channel === 'sms' || channel === 'whatsapp' ? g.phone !== null : true;

/** The channel a message step goes on: fixed, else the latest conversation's, else the first reachable. */
async function channelFor(reads: BatchReads, j: Journey, guest: Guest): Promise<string> {
  if (j.channel !== undefined) {
    if (!reachable(j.channel, guest)) throw new StepFailure(`the guest has no address for the ${j.channel} channel`);
    return j.channel;
  }
  const latest = latestAmong((await reads.conversations()).get(guest.id) ?? []);
  if (latest !== undefined) return latest.channel;
  const first = CHANNEL_ORDER.find((c) => reachable(c, guest));
  if (first === undefined) throw new StepFailure('the guest has no phone number or email address');
  return first;
}

/**
 * Sends the step's message through the ordinary path: rules checked first (window, template, an
 * address), then the guest's latest conversation on the channel (or a new one) takes the message,
 * `sender.type: system`, and its send job is written in this transaction.
 */
async function sendStepMessage(
  tx: Tx,
  outbox: Outbox,
  j: Journey,
  guest: Guest,
  fill: (text: string) => string,
  sender: LocalSender | null,
  reads: BatchReads,
): Promise<MessageView> {
  // Steps of one guest's stays due together (several stays, or one stay's journeys) take turns on
  // the guest's row, locked with the step (stepToRun): each sees the conversation the one before
  // opened, so they share it instead of each opening its own (SQLite runs one writer at a time).
  const channel = await channelFor(reads, j, guest);
  let template: RenderedTemplate | null = null;
  let content: string;
  try {
    if (j.action.template !== undefined) {
      if (channel !== 'whatsapp') throw new StepFailure(`a template message is for WhatsApp, not ${channel}`);
      template = await renderTemplate(tx, { ...j.action.template, parameters: j.action.template.parameters.map(fill) });
      content = template.content;
    } else {
      content = fill(j.action.content ?? '');
      if (content.trim() === '') throw new StepFailure('the message is empty once its placeholders are filled in');
      if (channel === 'whatsapp') await assertWhatsAppWindow(tx, guest.id);
    }
  } catch (err) {
    if (err instanceof AppError) throw new StepFailure(err.message);
    throw err;
  }
  const guestConversations = (await reads.conversations()).get(guest.id) ?? [];
  const existing = latestAmong(guestConversations, channel);
  let conversationId: string;
  let at: string;
  let assignee: string | null = null;
  let opened: Opened | undefined;
  if (existing !== undefined) {
    // The conversation's row first (its time taken under its lock), as every outbound message.
    const ref = await advanceConversationRef(tx, existing.id);
    // Deleted since the batch read it (the guest erased): the step is retried alone, read anew.
    if (ref === undefined) throw new Error(`conversation ${existing.id} is gone`);
    conversationId = existing.id;
    at = ref.last_message_at;
    assignee = ref.assignee;
    existing.at = at;
  } else {
    if (channel === 'web') throw new StepFailure('the guest has no web conversation to write in');
    conversationId = newId('cnv');
    at = nowIso();
    const row: NewConversation = {
      id: conversationId,
      guestId: guest.id,
      channel: channel as 'whatsapp' | 'sms' | 'email',
      subject: null,
      assignee: null,
      messageCount: 1,
      at,
    };
    opened = await insertConversation(tx, row);
    guestConversations.push({ id: conversationId, channel, status: 'open', at, created: at });
    // Its event shows it as written, the guest's current stay read once for the batch's guests,
    // and its message is counted as written into it (nothing writes to it in between): no read of
    // the row back.
    conversationEvents(
      outbox,
      SYSTEM,
      null,
      newConversationView(row, guest.name, (await reads.stays()).get(guest.id) ?? null, opened.sla),
    );
  }
  const message = await storeOutbound(
    tx,
    channel,
    {
      conversation_id: conversationId,
      direction: 'outbound',
      type: 'text',
      content,
      sender_type: 'system',
      sender_id: null,
      delivery_status: 'queued',
      created_at: at,
    },
    template,
    sender,
    opened,
  );
  messageCreated(outbox, SYSTEM, message, assignee);
  return message;
}

/** Steps' records sent with a COMMIT (finish). */
const STEP_RECORDS: CommitTotal<CompiledQuery[]> = {
  empty: () => [],
  add(total, part) {
    total.push(...part);
  },
  statements: (_x, total) => total,
};

async function finish(
  tx: Tx,
  outbox: Outbox,
  row: JourneyStepTable,
  guestId: string,
  set: { status: StepStatus; message_id?: string | null; task_id?: string | null; reason?: string | null },
) {
  const values = { message_id: null, task_id: null, reason: null, ...set, updated_at: nowIso() };
  const update = tx
    .updateTable('journey_steps')
    .set(values)
    .where('stay_id', '=', row.stay_id)
    .where('journey', '=', row.journey);
  // Nothing reads the step's record later in the transaction, and its row is locked by the
  // batch's read until the commit: on PostgreSQL it goes with the COMMIT, one round trip less per
  // step. Not on SQLite, where a plan of the stay later in the same group commit must find it ran.
  const later = tx.dialect === 'postgres' ? tx.addAtCommit : undefined;
  if (later !== undefined) later(STEP_RECORDS, [update.compile()]);
  else await update.execute();
  stepEvent(outbox, stepView({ ...row, ...values }, guestId));
}

/** The settings a batch of steps reads once, when its first step needs them. */
type StepSettings = { key: string; value: unknown }[];

/**
 * What a batch of steps reads once, each when a step first needs it: the settings, the current
 * stays of its guests (src/modules/stays/current.ts) and their conversations. The conversations
 * are read after the batch's guests were locked (PostgreSQL; SQLite runs one writer), so another
 * batch's steps for the same guests have committed; the batch's own steps keep them up to date
 * (a time taken, a conversation opened), so each sees what the one before wrote.
 */
interface BatchReads {
  settings: () => Promise<StepSettings>;
  stays: () => Promise<Map<string, NonNullable<StaySummaryView>>>;
  conversations: () => Promise<Map<string, GuestConversation[]>>;
}

/**
 * Runs one step in `tx`, a transaction it shares with the other steps of its batch, its row, stay
 * and guest read (and locked) and its job recorded done already: the message sent or the task
 * opened, or the step skipped or failed with its reason. Nothing when it no longer waits to run.
 */
async function runStep(
  tx: Tx,
  outbox: Outbox,
  reads: BatchReads,
  sender: LocalSender | null,
  stayId: string,
  journey: string,
  found: StepToRun | undefined,
): Promise<void> {
  if (found === undefined || found.status !== 'scheduled') return;
  const { row, stay, guest } = splitStep(found);
  const settings = await reads.settings();
  const journeys = (settingValue(settings, 'journeys') ?? []) as Journey[];
  const j = journeys.find((x) => x.name === journey && x.enabled !== false);
  if (j === undefined) {
    await finish(tx, outbox, row, stay.guest_id, {
      status: 'skipped',
      reason: 'its journey was removed or disabled',
    });
    return;
  }
  if (stay.status === 'cancelled' || stay.status === 'no_show') {
    await finish(tx, outbox, row, stay.guest_id, { status: 'skipped', reason: `the stay is ${stay.status}` });
    return;
  }
  if (Date.now() - new Date(toIso(row.due_at)).getTime() > LATE_LIMIT_MS) {
    await finish(tx, outbox, row, stay.guest_id, { status: 'skipped', reason: 'more than 6 h late when it ran' });
    return;
  }
  const hotelName = (settingValue(settings, 'hotel') as { name?: unknown } | undefined)?.name;
  const fill = (text: string) =>
    fillPlaceholders(text, {
      'guest.name': guest.name,
      'guest.firstName': firstNameOf(guest.name),
      'stay.room': stay.room ?? '',
      'stay.checkIn': stay.check_in,
      'stay.checkOut': stay.check_out,
      'hotel.name': typeof hotelName === 'string' ? hotelName : '',
    });
  if (j.action.type === 'task') {
    const task = await insertTask(tx, {
      title: fill(j.action.title!).slice(0, 200) || j.name,
      department: j.action.department!,
      priority: (j.action.priority ?? 'normal') as 'normal',
      description: j.action.description === undefined ? null : fill(j.action.description),
      guestId: stay.guest_id,
      stayId,
    });
    taskEvents(outbox, SYSTEM, null, task);
    await finish(tx, outbox, row, stay.guest_id, { status: 'done', task_id: task.id });
    return;
  }
  try {
    // Every StepFailure is thrown before the first write: nothing half-written stays behind.
    const message = await sendStepMessage(tx, outbox, j, guest, fill, sender, reads);
    await finish(tx, outbox, row, stay.guest_id, { status: 'done', message_id: message.id });
  } catch (err) {
    if (!(err instanceof StepFailure)) throw err;
    await finish(tx, outbox, row, stay.guest_id, { status: 'failed', reason: err.message });
  }
}

/**
 * Runs a batch of steps in one transaction: one BEGIN, one read each of the settings and of the
 * guests' conversations and current stays, and one COMMIT carrying the events, report figures and
 * steps' records (PostgreSQL) for all of them (docs/stays.md, At scale). A step that throws must not
 * take the others with it: the transaction is rolled back (a failed statement ends a PostgreSQL
 * transaction anyway), that step gets its error, and the others run again in a new one. Only a
 * failed commit, or a conflict the store gave up retrying, fails them all; each job is then
 * retried on its own backoff, as it would be alone.
 */
export async function runSteps(
  store: Store,
  sender: LocalSender | null,
  runs: BatchRun[],
  complete: CompleteRuns,
): Promise<BatchOutcome[]> {
  const errors = new Map<BatchRun, unknown>();
  let rest = runs;
  while (rest.length > 0) {
    let failed: BatchRun | undefined;
    const batch = rest;
    try {
      await withEvents(store, async (tx, outbox) => {
        // Run again by the store after a conflict: nothing of an earlier attempt counts.
        failed = undefined;
        for (const r of batch) errors.delete(r);
        const keys = batch.map((r) => r.job.payload as { stayId: string; journey: string });
        const params: Record<string, string> = {};
        keys.forEach((k, i) => {
          params[`s${i}`] = k.stayId;
          params[`j${i}`] = k.journey;
        });
        // The steps' own rows first, locked, with their stays and guests: a plan of one of these
        // stays meanwhile waits for this batch, then finds its step ran (PostgreSQL; SQLite runs
        // one writer at a time).
        const rows = await tx.run(stepsToRun(batch.length), params);
        const byKey = new Map(rows.map((r) => [stepKey(r.stay_id, r.journey), r]));
        // Recorded with the steps: the work and its job's end commit together, once. A job
        // cancelled or rescheduled since its claim (its stay moved) is not run.
        const held = new Set(await complete(tx, batch));
        const memo = <T>(read: () => Promise<T>) => {
          let value: Promise<T> | undefined;
          return () => {
            value ??= read();
            return value;
          };
        };
        const guestIds = rows.map((r) => r.guest_id);
        const reads: BatchReads = {
          settings: memo(() => tx.run(stepSettings, {})),
          // Steps write no stays: read once, when a step first opens a conversation (its event
          // shows the guest's current stay).
          stays: memo(() => currentStays(tx, guestIds)),
          conversations: memo(() => conversationsOfGuests(tx, guestIds)),
        };
        for (const [i, r] of batch.entries()) {
          if (!held.has(r)) {
            errors.set(r, new LeaseLost(r.job.id));
            continue;
          }
          const { stayId, journey } = keys[i]!;
          try {
            await runStep(tx, outbox, reads, sender, stayId, journey, byKey.get(stepKey(stayId, journey)));
          } catch (err) {
            // A deadlock or serialization conflict is the transaction's, not the step's: the store
            // runs the whole batch again.
            if (!isConflict(err)) failed = r;
            throw err;
          }
        }
      });
      break;
    } catch (err) {
      if (failed === undefined) {
        for (const r of batch) errors.set(r, err);
        break;
      }
      errors.set(failed, err);
      const without = failed;
      // The others run again, in a new transaction.
      rest = batch.filter((r) => r !== without);
    }
  }
  return runs.map((r) => (errors.has(r) ? { error: errors.get(r) } : null));
}

/** Steps run at once per instance, and at most this many share a transaction. */
const STEP_CONCURRENCY = { sqlite: 16, postgres: 32 } as const;
const STEP_BATCH = { sqlite: 8, postgres: 8 } as const;

export function stepHandler(store: Store, sender: () => LocalSender | null): JobHandler {
  return {
    kind: STEP_KIND,
    // A burst of steps due in one minute (every arrival of a day at check-in time) wants several
    // at once, but not many: on SQLite transactions at once share one commit (src/db/group-commit.ts),
    // and reads queue behind that batch while it holds the connection, so a long batch is a slow
    // inbox (docs/stays.md, At scale, has the trade measured); on PostgreSQL each transaction holds
    // one of the pool's connections (10 by default), and a step mostly waits for the API process's
    // next statement, not for another's row lock. What a step costs the API process is the limit
    // there, so the steps claimed together share one transaction (`batch`): its BEGIN, settings
    // read, events write and COMMIT are paid once per batch, not per step. A batch runs its steps
    // one after another, so on a busy process the batches at once are the burst's share of turns
    // against the reads: four at once on PostgreSQL (4 of the pool's 10 connections) ran a third
    // more steps than two, and the reads beside them no slower (docs/stays.md, At scale).
    concurrency: STEP_CONCURRENCY[store.dialect],
    // Claimed a batch at a time: one claim statement and one transaction per batch.
    claimBatch: STEP_BATCH[store.dialect],
    retryBaseMs: 1000,
    batch: { max: STEP_BATCH[store.dialect], run: (runs, complete) => runSteps(store, sender(), runs, complete) },
    run: async (job, ctx) => {
      const one = async (tx: Tx, runs: readonly BatchRun[]) => {
        try {
          await ctx.complete(tx);
          return [...runs];
        } catch (err) {
          if (err instanceof LeaseLost) return [];
          throw err;
        }
      };
      const [outcome] = await runSteps(store, sender(), [{ job, ctx }], one);
      if (outcome !== null && outcome !== undefined) throw outcome.error;
    },
  };
}

/**
 * Plans every stay that may still have a step to run (departing at most 31 days ago, the largest
 * offset) again, in batches of 200 stays per transaction, walking stays by id.
 */
export function replanHandler(store: Store, jobs: Jobs): JobHandler {
  return {
    kind: REPLAN_KIND,
    concurrency: 1,
    async run(_job, ctx) {
      const since = new Date(Date.now() - REPLAN_DAYS_BACK * 86_400_000).toISOString().slice(0, 10);
      let after = '';
      for (;;) {
        if (ctx.signal.aborted) throw new Error('stopped');
        const ids = await store.db
          .selectFrom('stays')
          .select('id')
          .where('id', '>', after)
          .where('check_out', '>=', since)
          .orderBy('id')
          .limit(REPLAN_BATCH)
          .execute();
        if (ids.length === 0) break;
        await withEvents(store, async (tx, outbox) => {
          const context = { journeys: await readJourneys(tx), clock: await hotelClock(tx) };
          for (const { id } of ids) await planJourneys(tx, outbox, jobs, id, context);
        });
        after = ids[ids.length - 1]!.id;
      }
    },
  };
}

/** Registers the journey jobs' handlers with this instance's runner. */
export default fp(
  async function journeys(app: FastifyInstance) {
    app.jobs.register(stepHandler(app.ctx.store, () => app.channelDispatcher ?? null));
    app.jobs.register(replanHandler(app.ctx.store, app.jobs));
  },
  { name: 'journeys', dependencies: ['jobs-runtime', 'channels-runtime'] },
);
