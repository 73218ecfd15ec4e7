// Owns the writes of the knowledge base: an entry is created, replaced or deleted in one
// transaction with its event; a missing entry is a 404.
import type { Static } from 'typebox';
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { notFound } from '../../lib/errors.js';
import { knowledgeDeleted, recordEvents, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { deleteEntry as deleteEntryRow, type EntryView, findEntry, insertEntry, replaceEntry } from './repository.js';
import { type CreateEntryBody, DEFAULT_CATEGORY, type UpdateEntryBody } from './schemas.js';

const missing = (id: string) => notFound('Knowledge entry', id);

export async function getEntry(store: Store, id: string): Promise<EntryView> {
  const entry = await findEntry(store, id);
  if (entry === undefined) throw missing(id);
  return entry;
}

/** Creates an entry; its category defaults to general. */
export function createEntry(store: Store, user: AuthUser, body: Static<typeof CreateEntryBody>): Promise<EntryView> {
  const { title, content, category = DEFAULT_CATEGORY } = body;
  return withEvents(store, async (tx, outbox) => {
    const created = await insertEntry(tx, { title, content, category });
    recordEvents(outbox, 'knowledge', staffActor(user), null, created);
    return created;
  });
}

export function updateEntry(
  store: Store,
  user: AuthUser,
  id: string,
  body: Static<typeof UpdateEntryBody>,
): Promise<EntryView> {
  return withEvents(store, async (tx, outbox) => {
    const before = await findEntry(tx, id);
    const after = before && (await replaceEntry(tx, id, body));
    if (before === undefined || after === undefined) throw missing(id);
    recordEvents(outbox, 'knowledge', staffActor(user), before, after);
    return after;
  });
}

export function deleteEntry(store: Store, user: AuthUser, id: string): Promise<void> {
  return withEvents(store, async (tx, outbox) => {
    const entry = await findEntry(tx, id);
    if (entry === undefined || !(await deleteEntryRow(tx, id))) throw missing(id);
    knowledgeDeleted(outbox, staffActor(user), entry);
  });
}
