// Owns finding the events that name a guest: those of their conversations (and their messages),
// and those whose record carries the guest's id (the guest itself, their stays and tasks, their
// conversations). Events keep no guest column, so this reads the whole events table (the
// retention's worth, EVENT_RETENTION_DAYS) a page at a time in id order: an export or an erase is
// rare, and the write path of every event stays as it is.
import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import type { EventListRow } from '../events/repository.js';
import type { ErasedScope } from './redact.js';

const PAGE = 500;

const likeQuoted = (id: string) => `%"${id.replace(/[\\%_]/g, (c) => `\\${c}`)}"%`;

export type GuestEventRow = EventListRow & { changes: string | null };

/** Pages of the events naming the guest or their conversations, oldest first. */
export async function* eventsNaming(
  db: Executor,
  s: Pick<ErasedScope, 'guestId' | 'conversationIds'>,
): AsyncGenerator<GuestEventRow[]> {
  const conversations = [...s.conversationIds];
  const pattern = likeQuoted(s.guestId);
  for (let after = 0; ; ) {
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'occurred_at', 'actor_type', 'actor_id', 'assignee', 'data', 'changes'])
      .where('id', '>', after)
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
    if (rows.length < PAGE) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}
