// Owns reading a guest's history a page at a time, for the export and the erase: a conversation's
// messages in order, and the events naming the guest. Each statement reads a bounded range (a page
// of a conversation's message index; a window of event ids), so a long history costs more
// statements, never one that outlasts the store's statement timeout or a page of memory.
//
// Events keep no guest column: the events naming the guest are those of their conversations (and
// so their messages), and those whose record carries the guest's id (the guest, their stays and
// tasks, their conversations). Finding them reads the whole events table (the retention's worth,
// EVENT_RETENTION_DAYS) in id windows: an export or an erase is rare, and the write path of every
// event stays as it is.
import { sql } from 'kysely';
import type { Executor, MessageRow } from '../../db/types.js';
import { MESSAGE_COLUMNS } from '../conversations/messages-repository.js';
import type { EventListRow } from '../events/repository.js';
import type { ErasedScope } from './redact.js';

const PAGE = 500;
/** Event ids one statement looks through at most. */
const WINDOW = 50_000;

const likeQuoted = (id: string) => `%"${id.replace(/[\\%_]/g, (c) => `\\${c}`)}"%`;

export type GuestEventRow = EventListRow & { changes: string | null };
export type HistoryMessage = Pick<MessageRow, (typeof MESSAGE_COLUMNS)[number]>;

/** Pages of the events naming the guest or their conversations, oldest first. */
export async function* eventsNaming(
  db: Executor,
  s: Pick<ErasedScope, 'guestId' | 'conversationIds'>,
): AsyncGenerator<GuestEventRow[]> {
  const conversations = [...s.conversationIds];
  const pattern = likeQuoted(s.guestId);
  const range = await db
    .selectFrom('events')
    .select((eb) => [eb.fn.min('id').as('lo'), eb.fn.max('id').as('hi')])
    .executeTakeFirst();
  if (range?.lo == null || range.hi == null) return;
  const last = Number(range.hi);
  for (let after = Number(range.lo) - 1; after < last; ) {
    const until = Math.min(after + WINDOW, last);
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'occurred_at', 'actor_type', 'actor_id', 'assignee', 'data', 'changes'])
      .where('id', '>', after)
      .where('id', '<=', until)
      .where((eb) =>
        eb.or([
          sql<boolean>`data like ${pattern} escape '\\'`,
          ...(conversations.length > 0 ? [eb('conversation_id', 'in', conversations)] : []),
        ]),
      )
      .orderBy('id')
      .limit(PAGE)
      .execute();
    if (rows.length > 0) yield rows;
    after = rows.length === PAGE ? Number(rows[rows.length - 1]!.id) : until;
  }
}

/** A conversation's messages oldest first, a page at a time, each page after the last one's key. */
export async function* messagePages(db: Executor, conversationId: string): AsyncGenerator<HistoryMessage[]> {
  let after: { at: string | Date; id: string } | null = null;
  for (;;) {
    const key: { at: string | Date; id: string } | null = after;
    const rows: HistoryMessage[] = await db
      .selectFrom('messages')
      .select(MESSAGE_COLUMNS)
      .where('conversation_id', '=', conversationId)
      .$if(key !== null, (q) => q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(key!.at, key!.id))))
      .orderBy('created_at')
      .orderBy('id')
      .limit(PAGE)
      .execute();
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE) return;
    const lastRow: HistoryMessage = rows[rows.length - 1]!;
    after = { at: lastRow.created_at, id: lastRow.id };
  }
}
