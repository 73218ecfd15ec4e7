// Owns the export of everything held about a guest (GDPR arts. 15 and 20, docs/data-rights.md):
// the guest, their stays, their conversations each with its messages and their files, the tasks
// about them, and the events naming them, as one JSON document. It is written as it is read, a
// page at a time (messages and events 500 at a time), so a guest with a long history costs one
// page of memory, not the whole document.
import { Readable } from 'node:stream';
import type { Executor, MessageRow as Row } from '../../db/types.js';

type MessageRow = Pick<Row, (typeof MESSAGE_COLUMNS)[number]>;

import { withAttachments } from '../attachments/service.js';
import type { LinkSigner } from '../attachments/signing.js';
import { COLUMNS as MESSAGE_COLUMNS, toMessage } from '../conversations/messages-repository.js';
import { COLUMNS as CONVERSATION_COLUMNS, toConversation } from '../conversations/repository.js';
import { toEventJson } from '../events/repository.js';
import { currentStay } from '../stays/current.js';
import { COLUMNS as STAY_COLUMNS, toStay } from '../stays/repository.js';
import { COLUMNS as TASK_COLUMNS, toTask } from '../tasks/repository.js';
import { eventsNaming } from './guest-events.js';
import type { GuestView } from './repository.js';

const PAGE = 500;

/** The export of `guest` (found by the caller, so a missing one is a 404 before anything is sent). */
export function exportStream(db: Executor, signer: LinkSigner, guest: GuestView): Readable {
  return Readable.from(exportParts(db, signer, guest));
}

async function* exportParts(db: Executor, signer: LinkSigner, guest: GuestView): AsyncGenerator<string> {
  yield `{"success":true,"data":{"guest":${JSON.stringify(guest)}`;
  const stays = await db
    .selectFrom('stays')
    .select(STAY_COLUMNS)
    .where('guest_id', '=', guest.id)
    .orderBy('check_in')
    .orderBy('id')
    .execute();
  yield `,"stays":${JSON.stringify(stays.map(toStay))},"conversations":[`;
  const stay = await currentStay(db, guest.id);
  const conversations = await db
    .selectFrom('conversations as c')
    .innerJoin('guests as g', 'g.id', 'c.guest_id')
    .select(CONVERSATION_COLUMNS)
    .where('c.guest_id', '=', guest.id)
    .orderBy('c.created_at')
    .orderBy('c.id')
    .execute();
  for (const [i, row] of conversations.entries()) {
    const head = JSON.stringify(toConversation({ ...row, stay }));
    yield `${i === 0 ? '' : ','}${head.slice(0, -1)},"messages":[`;
    let first = true;
    for await (const page of messagePages(db, row.id)) {
      const messages = await withAttachments(db, signer, page.map(toMessage));
      yield `${first ? '' : ','}${messages.map((m) => JSON.stringify(m)).join(',')}`;
      first = false;
    }
    yield ']}';
  }
  const conversationIds = conversations.map((c) => c.id);
  const tasks = await db
    .selectFrom('tasks')
    .select(TASK_COLUMNS)
    .where((eb) =>
      eb.or([
        eb('guest_id', '=', guest.id),
        ...(conversationIds.length > 0 ? [eb('conversation_id', 'in', conversationIds)] : []),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  yield `],"tasks":${JSON.stringify(tasks.map(toTask))},"events":[`;
  let first = true;
  for await (const page of eventsNaming(db, { guestId: guest.id, conversationIds: new Set(conversationIds) })) {
    yield `${first ? '' : ','}${page.map(toEventJson).join(',')}`;
    first = false;
  }
  yield ']}}';
}

/** A conversation's messages oldest first, a page at a time, each page after the last one's key. */
async function* messagePages(db: Executor, conversationId: string) {
  let after: { at: string | Date; id: string } | null = null;
  for (;;) {
    const key: { at: string | Date; id: string } | null = after;
    const rows: MessageRow[] = await db
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
    const last: MessageRow = rows[rows.length - 1]!;
    after = { at: last.created_at, id: last.id };
  }
}
