// Owns the export of everything held about a guest (GDPR arts. 15 and 20, docs/data-rights.md):
// the guest, their stays, their conversations each with its messages and their files, the tasks
// about them, and the events naming them, as one JSON document. It is written as it is read, a
// page at a time (history.ts), so a guest with a long history costs one page of memory, not the
// whole document.
import { Readable } from 'node:stream';
import type { Executor } from '../../db/types.js';
import { withAttachments } from '../attachments/service.js';
import type { LinkSigner } from '../attachments/signing.js';
import { toMessage } from '../conversations/messages-repository.js';
import { COLUMNS as CONVERSATION_COLUMNS, toConversation } from '../conversations/repository.js';
import { toEventJson } from '../events/repository.js';
import { currentStay } from '../stays/current.js';
import { COLUMNS as STAY_COLUMNS, toStay } from '../stays/repository.js';
import { COLUMNS as TASK_COLUMNS, toTask } from '../tasks/repository.js';
import { eventsNaming, messagePages } from './history.js';
import type { GuestView } from './repository.js';

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
