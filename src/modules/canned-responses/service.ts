// Owns the rules of canned responses: placeholders must be known ones, a shortcode is unique (409
// naming the holder, also when a concurrent write takes it first), a missing one is a 404.
import { isUniqueViolation, type Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { conflict, fieldError, notFound } from '../../lib/errors.js';
import { PLACEHOLDERS, unknownPlaceholders } from './placeholders.js';
import {
  deleteCanned as deleteRow,
  findCanned,
  insertCanned,
  shortcodeHolder,
  updateCanned as updateRow,
} from './repository.js';
import type { CannedChanges, CannedView, CreateCannedInput } from './schemas.js';

const missing = (id: string) => notFound('Canned response', id);

const taken = (shortcode: string, existingId: string) =>
  conflict(`Another canned response already has the shortcode ${shortcode}`, [
    { field: 'shortcode', message: `is already used by canned response ${existingId}`, existingId },
  ]);

function checkPlaceholders(content: string | undefined): void {
  if (content === undefined) return;
  const unknown = unknownPlaceholders(content);
  if (unknown.length > 0) {
    throw fieldError(
      'content',
      `holds unknown placeholders ${unknown.map((u) => `{{${u}}}`).join(', ')}; known are ` +
        PLACEHOLDERS.map((p) => `{{${p}}}`).join(', '),
    );
  }
}

/** Runs a write; a shortcode taken between the check and the write is answered as a conflict too. */
async function write<T>(
  store: Store,
  shortcode: string | undefined,
  id: string | undefined,
  work: (tx: Executor) => Promise<T>,
) {
  try {
    return await store.transact(work);
  } catch (err) {
    if (shortcode === undefined || !isUniqueViolation(err)) throw err;
    const holder = await shortcodeHolder(store, shortcode, id);
    throw holder === undefined
      ? conflict(`Another canned response already has the shortcode ${shortcode}`)
      : taken(shortcode, holder);
  }
}

export async function getCanned(store: Store, id: string): Promise<CannedView> {
  const found = await findCanned(store, id);
  if (found === undefined) throw missing(id);
  return found;
}

export function createCanned(store: Store, body: CreateCannedInput): Promise<CannedView> {
  checkPlaceholders(body.content);
  return write(store, body.shortcode, undefined, async (tx) => {
    const holder = await shortcodeHolder(tx, body.shortcode);
    if (holder !== undefined) throw taken(body.shortcode, holder);
    return insertCanned(tx, body);
  });
}

export function updateCanned(store: Store, id: string, changes: CannedChanges): Promise<CannedView> {
  checkPlaceholders(changes.content);
  return write(store, changes.shortcode, id, async (tx) => {
    if (changes.shortcode !== undefined) {
      const holder = await shortcodeHolder(tx, changes.shortcode, id);
      if (holder !== undefined) throw taken(changes.shortcode, holder);
    }
    const after = await updateRow(tx, id, changes);
    if (after === undefined) throw missing(id);
    return after;
  });
}

export async function deleteCanned(store: Store, id: string): Promise<void> {
  if (!(await store.transact((tx) => deleteRow(tx, id)))) throw missing(id);
}
