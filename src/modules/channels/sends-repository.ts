// Owns send jobs: one row per outbound text, written in the message's own transaction, claimed by
// exactly one dispatcher at a time (a lease that a crashed instance loses, renewed while a send
// lasts), for the channels that have a free slot, in order per conversation, each claim counted as
// an attempt; finished or rescheduled under that lease, and purged some days after finishing.
import { CompiledQuery, sql } from 'kysely';
import { heldForCommit, heldSoFar } from '../../db/executor.js';
import { type Param, prepared } from '../../db/prepared.js';
import { nowIso, toIso, toJson } from '../../db/store.js';
import type { CommitTotal, Executor } from '../../db/types.js';
import type { Channel, SendTemplate } from './providers.js';

/** The channels that send through a provider, each with its own slots (`web` texts have no job). */
export type SendChannel = Exclude<Channel, 'web'>;
export const SEND_CHANNELS: readonly SendChannel[] = ['email', 'sms', 'whatsapp'];

/** A lease on a send for one dispatcher (src/modules/channels/dispatcher.ts). */
export interface SendLease {
  instance: string;
  until: string;
  /** `until` in milliseconds. */
  untilMs: number;
}

/** This instance's dispatcher, as the code that writes a text sees it (claim at birth). */
export interface LocalSender {
  /** A lease for one more text of the channel, or null when the dispatcher cannot take one now. */
  lease(channel: string): SendLease | null;
  /** Sends a text whose job was claimed with that lease; called once its transaction committed. */
  adopt(send: ClaimedSend): void;
  /**
   * Told once a transaction that wrote an unclaimed job for the conversation committed: it is
   * claimed now, or when the send ahead of it in the conversation ends, not at the next poll.
   */
  queued(conversationId: string): void;
  /** Told once a transaction that sent a text at commit (the web channel: no provider) committed. */
  sentAtCommit(channel: string): void;
}

type SendRow = {
  message_id: string;
  conversation_id: string;
  channel: string;
  status: 'pending';
  attempts: number;
  next_attempt_at: string;
  created_at: string;
  template: string | null;
  locked_until: string | null;
  locked_by: string | null;
};

/** The send jobs a PostgreSQL transaction holds for its COMMIT, and the conversations they are of. */
interface HeldSends {
  rows: SendRow[];
  conversations: Set<string>;
}

const SENDS: CommitTotal<HeldSends> = {
  empty: () => ({ rows: [], conversations: new Set() }),
  add(total, part) {
    total.rows.push(...part.rows);
  },
  // In the order they were written: texts of one conversation are claimed oldest first anyway.
  statements: (x, total) =>
    total.rows.length === 0 ? [] : [x.insertInto('channel_sends').values(total.rows).compile()],
};

/**
 * Writes a text's send job. With `lease`, the job is claimed for that dispatcher in the same
 * statement, unless an earlier send of the conversation is still pending (texts of a conversation
 * leave in order, so that one goes first and this one waits for a claim in turn). True when
 * claimed. Callers write the conversation's row first in their transaction, so on PostgreSQL a
 * concurrent text of the same conversation waits for it and then sees this job pending.
 *
 * `opened`: the conversation was opened in this transaction and has no text before this one, so
 * no send of it can be pending (no other transaction sees it before the commit). On PostgreSQL the
 * job is then known without the statement's look and is held for the COMMIT, written there with the
 * transaction's other held rows (Tx.addAtCommit): one round trip less per text of a new
 * conversation (a journey step's, docs/stays.md). A later text of that conversation in the same
 * transaction finds its job held here (pending) and waits, held too. Not on SQLite, where a later
 * transaction of the same group commit sees the conversation before the commit and would not see
 * the job.
 */
export async function insertSend(
  db: Executor,
  messageId: string,
  conversationId: string,
  channel: string,
  at: string,
  template: SendTemplate | null = null,
  lease: SendLease | null = null,
  opened = false,
): Promise<boolean> {
  const json =
    template === null
      ? null
      : toJson({ name: template.name, language: template.language, parameters: template.parameters });
  const pendingHeld = heldSoFar(db, SENDS)?.conversations.has(conversationId) === true;
  const held = opened || pendingHeld ? heldForCommit(db, SENDS) : undefined;
  if (held !== undefined) {
    const claim = pendingHeld ? null : lease;
    held.rows.push({
      message_id: messageId,
      conversation_id: conversationId,
      channel,
      status: 'pending',
      attempts: claim === null ? 0 : 1,
      next_attempt_at: at,
      created_at: at,
      template: json,
      locked_until: claim?.until ?? null,
      locked_by: claim?.instance ?? null,
    });
    held.conversations.add(conversationId);
    return claim !== null;
  }
  if (lease === null) {
    await db
      .insertInto('channel_sends')
      .values({
        message_id: messageId,
        conversation_id: conversationId,
        channel,
        status: 'pending',
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
        template: json,
      })
      .execute();
    return false;
  }
  // Whether an earlier send of the conversation is pending, read once for the three columns it
  // decides. Claimed at birth, the job counts its first attempt, as a claim does (claimSends).
  const ts = sql.raw(db.dialect === 'postgres' ? 'timestamptz' : 'text');
  const { rows } = await sql<{ locked_by: string | null }>`insert into channel_sends
  (message_id, conversation_id, channel, status, attempts, next_attempt_at, created_at, template, locked_until, locked_by)
  select ${messageId}, ${conversationId}, ${channel}, 'pending', case when x.e then 0 else 1 end,
    cast(${at} as ${ts}), cast(${at} as ${ts}), ${json},
    case when x.e then null else cast(${lease.until} as ${ts}) end, case when x.e then null else ${lease.instance} end
  from (select exists (select 1 from channel_sends where conversation_id = ${conversationId} and status = 'pending') as e) as x
  returning locked_by`.execute(db);
  return rows[0]?.locked_by === lease.instance;
}

/**
 * Makes a finished send pending again (a retry of a failed text). False when none exists or an
 * attempt holds it.
 */
export async function rescheduleSend(db: Executor, messageId: string): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('channel_sends')
    .set({
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      locked_until: null,
      locked_by: null,
      finished_at: null,
    })
    .where('message_id', '=', messageId)
    .where('status', '=', 'done')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Pending, unclaimed (or lease expired), of one of `channels` (null: any), and the oldest pending
 * send of its conversation.
 */
function claimable(db: Executor, at: string, channels: readonly string[] | null) {
  let q = db
    .selectFrom('channel_sends as s')
    .where('s.status', '=', 'pending')
    .where((eb) => eb.or([eb('s.locked_until', 'is', null), eb('s.locked_until', '<', at)]));
  if (channels !== null) q = q.where('s.channel', 'in', channels);
  return q.where((eb) =>
    eb.not(
      eb.exists(
        eb
          .selectFrom('channel_sends as o')
          .select('o.message_id')
          .whereRef('o.conversation_id', '=', 's.conversation_id')
          .where('o.status', '=', 'pending')
          // A row-value comparison is a range of the conversation's index (conversation, status,
          // created, id): one step finds an earlier send or none. The same test written with OR
          // read every pending send of the conversation for its oldest one.
          .where(sql<boolean>`(o.created_at, o.message_id) < (s.created_at, s.message_id)`),
      ),
    ),
  );
}

export interface ClaimedSend {
  messageId: string;
  conversationId: string;
  /** The conversation's channel, whose slots the send takes. */
  channel: string;
  /** Attempts counted so far, this claim's included. */
  attempts: number;
  /** When this claim's lease runs out (ms). */
  leaseUntil: number;
}

type ClaimedRow = { message_id: string; conversation_id: string; attempts: number; channel: string | null };
const claimedOf = (r: ClaimedRow, leaseUntil: number): ClaimedSend => ({
  messageId: r.message_id,
  conversationId: r.conversation_id,
  // A job written before jobs named their channel is sent in a bucket of its own.
  channel: r.channel ?? 'unknown',
  attempts: Number(r.attempts),
  leaseUntil,
});

/**
 * Leases up to `limit` due sends of `channels` (null: any) to this instance until `lockMs` from
 * now, counting an attempt for each: an instance that dies mid-send (a crash loop) uses up the
 * text's attempts like any failure, and it ends `failed` rather than being sent for ever.
 * PostgreSQL selects the candidates FOR UPDATE SKIP LOCKED (in `claim_sends`, migration 020) so
 * concurrent instances claim disjoint rows; on SQLite the single statement runs alone.
 */
export async function claimSends(
  db: Executor,
  instance: string,
  limit: number,
  lockMs: number,
  channels: readonly string[] | null = null,
): Promise<ClaimedSend[]> {
  const now = new Date();
  const at = now.toISOString();
  const untilMs = now.getTime() + lockMs;
  const until = new Date(untilMs).toISOString();
  if (db.dialect === 'postgres') {
    // The same statement as below, in a function whose plan does not follow stale statistics
    // (migrations 015, 020 and 036).
    const { rows } = await db.executeQuery<ClaimedRow>(
      CompiledQuery.raw('select * from claim_sends($1, $2, $3, $4, $5)', [limit, at, until, instance, channels]),
    );
    return rows.map((r) => claimedOf(r, untilMs));
  }
  const candidates = claimable(db, at, channels)
    .select('s.message_id')
    .where('s.next_attempt_at', '<=', at)
    .orderBy('s.next_attempt_at')
    .limit(limit);
  const rows = await db
    .updateTable('channel_sends')
    .set((eb) => ({ locked_until: until, locked_by: instance, attempts: eb('attempts', '+', 1) }))
    .where('message_id', 'in', candidates)
    .returning(['message_id', 'conversation_id', 'attempts', 'channel'])
    .execute();
  return rows.map((r) => claimedOf(r, untilMs));
}

/** When the earliest claimable send of `channels` (null: any) comes due, or null when none waits. */
export async function nextSendDueAt(db: Executor, channels: readonly string[] | null = null): Promise<number | null> {
  const row = await claimable(db, new Date().toISOString(), channels)
    .select((eb) => eb.fn.min('s.next_attempt_at').as('at'))
    .executeTakeFirst();
  return row?.at == null ? null : new Date(toIso(row.at)).getTime();
}

const finishSent = prepared((db, p: Param<{ messageId: string; instance: string }>) =>
  db
    .deleteFrom('channel_sends')
    .where('message_id', '=', p('messageId'))
    .where('locked_by', '=', p('instance'))
    .returning('message_id'),
);

const finishAttempt = prepared(
  (
    db,
    p: Param<{
      messageId: string;
      instance: string;
      status: 'done' | 'pending';
      retryAt: string | null;
      finishedAt: string | null;
    }>,
  ) =>
    db
      .updateTable('channel_sends')
      .set({
        status: p('status'),
        next_attempt_at: p('retryAt'),
        locked_until: null,
        locked_by: null,
        finished_at: p('finishedAt'),
      })
      .where('message_id', '=', p('messageId'))
      .where('locked_by', '=', p('instance'))
      .returning('message_id'),
);

/**
 * Records an attempt made under this instance's lease: due again at `nextAttemptAt` (a retry), or
 * settled. A sent text's job is deleted, so the table the dispatcher claims from holds pending
 * work (and the failed texts' jobs) only, and a claim's cost does not grow with every text ever
 * sent; a failed one's job is kept, `done`, so a retry sends it again as it was (a template by
 * its name and parameters). False when the lease was lost meanwhile.
 */
export async function recordSend(
  db: Executor,
  messageId: string,
  instance: string,
  next: { retryAt: string } | 'sent' | 'failed',
): Promise<boolean> {
  if (next === 'sent') return (await db.run(finishSent, { messageId, instance })).length > 0;
  const retryAt = next === 'failed' ? null : next.retryAt;
  const status = retryAt === null ? 'done' : 'pending';
  const finishedAt = retryAt === null ? nowIso() : null;
  return (await db.run(finishAttempt, { messageId, instance, status, retryAt, finishedAt })).length > 0;
}

/**
 * Gives this instance's leases back so any instance claims the sends again at once. `unsent`: no
 * provider was called for them under this claim, so its attempt is not counted.
 */
export async function releaseSends(db: Executor, instance: string, ids: string[], unsent: boolean): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('channel_sends')
    .set(() => ({
      locked_until: null,
      locked_by: null,
      ...(unsent ? { attempts: sql<number>`case when attempts > 0 then attempts - 1 else 0 end` } : {}),
    }))
    .where('locked_by', '=', instance)
    .where('message_id', 'in', ids)
    .execute();
}

/**
 * Extends this instance's leases on `ids` to `until`; returns the ids it still held (a lease
 * another instance took after it ran out is not taken back).
 */
export async function renewLeases(db: Executor, instance: string, ids: string[], until: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .updateTable('channel_sends')
    .set({ locked_until: until })
    .where('locked_by', '=', instance)
    .where('message_id', 'in', ids)
    .returning('message_id')
    .execute();
  return rows.map((r) => r.message_id);
}

/**
 * Deletes the jobs that finished before `before`: a failed text's job is kept that long so that a
 * retry sends it as it was (a template by its name); a retry after that gets a fresh job.
 */
export async function purgeFinishedSends(db: Executor, before: string): Promise<number> {
  const r = await db
    .deleteFrom('channel_sends')
    .where('status', '=', 'done')
    .where('finished_at', '<', before)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Texts waiting to be sent (pending jobs, due or not), by channel: for the metrics. */
export async function waitingByChannel(db: Executor): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('channel_sends')
    .where('status', '=', 'pending')
    .select(['channel', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('channel')
    .execute();
  return new Map(rows.map((r) => [r.channel ?? '', Number(r.n)]));
}
