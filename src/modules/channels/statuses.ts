// Owns what providers report about the texts the API sent (Twilio's status callback, WhatsApp's
// statuses[]): a report is applied to the outbound text that carries the provider's id, forward
// only and never to a `queued` text (a retry releases the old id: src/modules/channels/retry.ts).
// A report for an id no text carries yet is kept: the provider answered the send and reported on
// it before the dispatcher committed `sent`, and the dispatcher applies it, in the order it came,
// in the transaction that records `sent` with that id (applyKeptStatuses). Reports never claimed
// (another system sharing the number) and finished send jobs are purged after their retention.
import { sql } from 'kysely';
import { STATUS_LOCK } from '../../db/migrations/020-send-guarantees.js';
import { nowIso, type Store, toIso } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import { SYSTEM } from '../events/emit.js';
import type { Outbox } from '../events/outbox.js';
import { applyStatus, type FillFiles, type MessageRef, type StatusChange, withStatusEvents } from './delivery.js';
import { purgeFinishedSends } from './sends-repository.js';

const DAY_MS = 86_400_000;
/** A failed text's job is kept this long, so a retry sends it as it was (a template by name). */
export const FINISHED_SEND_RETENTION_DAYS = 7;
/** A report no text claimed within this long is about a text this API did not send. */
export const KEPT_STATUS_RETENTION_DAYS = 1;

/**
 * PostgreSQL: waits for any transaction keeping or taking a report for this id (a callback and
 * the dispatcher recording `sent` with the id run one after the other, so the second always sees
 * the first's write; take_channel_statuses, migration 020, takes the same lock). SQLite runs one
 * write transaction at a time already.
 */
async function lockId(tx: Executor, externalId: string): Promise<void> {
  if (tx.dialect !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(${sql.lit(STATUS_LOCK)}, hashtext(${externalId}))`.execute(tx);
}

/**
 * A provider's report on the outbound text carrying `externalId`: applied when it moves that text
 * forward (a repeat or a late `delivered` after `read` changes nothing), its event carrying the
 * message's files (`fill`). False when no text carries the id yet: the report is kept until one
 * is recorded sent with it.
 */
export async function receiveStatus(
  store: Store,
  externalId: string,
  change: StatusChange,
  fill: FillFiles | null,
): Promise<boolean> {
  return withStatusEvents(store, fill, async (tx, outbox) => {
    await lockId(tx, externalId);
    const row = await tx
      .selectFrom('messages as m')
      .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
      .where('m.external_id', '=', externalId)
      .where('m.direction', '=', 'outbound')
      .select(['m.id', 'm.conversation_id', 'c.assignee'])
      .executeTakeFirst();
    if (row === undefined) {
      await tx
        .insertInto('channel_statuses')
        .values({
          external_id: externalId,
          status: change.status,
          at: change.at ?? null,
          error_code: change.error?.code ?? null,
          error_message: change.error?.message ?? null,
          received_at: nowIso(),
        })
        .execute();
      return false;
    }
    const ref = { conversationId: row.conversation_id, messageId: row.id, assignee: row.assignee };
    await applyStatus(tx, outbox, SYSTEM, ref, change, true);
    return true;
  });
}

interface KeptRow {
  id: number | string;
  external_id: string;
  status: string;
  at: string | Date | null;
  error_code: string | null;
  error_message: string | null;
}

/**
 * In the transaction that recorded these texts `sent` with their provider ids: removes the
 * reports kept for those ids and applies them, oldest first. One statement for the whole batch.
 */
export async function applyKeptStatuses(
  tx: Tx,
  outbox: Outbox,
  sent: { ref: MessageRef; externalId: string }[],
): Promise<void> {
  const ids = sent.map((s) => s.externalId);
  let rows: KeptRow[];
  if (tx.dialect === 'postgres') {
    rows = (await sql<KeptRow>`select * from take_channel_statuses(${ids}::text[])`.execute(tx)).rows;
  } else {
    rows = await tx
      .deleteFrom('channel_statuses')
      .where('external_id', 'in', ids)
      .returning(['id', 'external_id', 'status', 'at', 'error_code', 'error_message'])
      .execute();
  }
  if (rows.length === 0) return;
  const refs = new Map(sent.map((s) => [s.externalId, s.ref]));
  rows.sort((a, b) => Number(a.id) - Number(b.id));
  for (const r of rows) {
    const change: StatusChange = {
      status: r.status as StatusChange['status'],
      ...(r.at === null ? {} : { at: toIso(r.at) }),
      ...(r.error_code === null ? {} : { error: { code: r.error_code, message: r.error_message ?? '' } }),
    };
    await applyStatus(tx, outbox, SYSTEM, refs.get(r.external_id)!, change, true);
  }
}

/** Deletes finished send jobs and unclaimed reports past their retention (a periodic job). */
export async function purgeChannelRecords(db: Executor, now = Date.now()): Promise<void> {
  await purgeFinishedSends(db, new Date(now - FINISHED_SEND_RETENTION_DAYS * DAY_MS).toISOString());
  await db
    .deleteFrom('channel_statuses')
    .where('received_at', '<', new Date(now - KEPT_STATUS_RETENTION_DAYS * DAY_MS).toISOString())
    .execute();
}
