// Owns what an erased guest's records look like wherever a copy of them was kept as JSON (event
// data and changes, webhook payloads, stored idempotent answers): each object is recognised by its
// id, and its personal fields are given the values the erase wrote in the store (docs/data-rights.md).
// Redacting what is already redacted changes nothing, so an erase can run again.
import type { GuestChanges } from './repository.js';

export const ERASED_NAME = 'Erased guest';
export const ERASED_TEXT = '[erased]';

/** What the erase reaches: the guest, and the records holding their data, by id. */
export interface ErasedScope {
  guestId: string;
  conversationIds: ReadonlySet<string>;
  stayIds: ReadonlySet<string>;
  attachmentIds: ReadonlySet<string>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The erased values of a guest's personal fields: what the erase writes, and what each copy is given. */
export const ERASED_GUEST = {
  name: ERASED_NAME,
  email: null,
  phone: null,
  notes: null,
  externalRef: null,
  attributes: {},
  tags: [],
} satisfies GuestChanges;
const GUEST_FIELDS: Obj = ERASED_GUEST;
const STAY_FIELDS: Obj = { notes: null, externalRef: null };
const CONVERSATION_FIELDS: Obj = { subject: null };
const ATTACHMENT_FIELDS: Obj = { filename: ERASED_TEXT };

/** The erased values of the personal fields of `o`, by what its id says it is (none: not in scope). */
function fieldsOf(o: Obj, s: ErasedScope): Obj | null {
  const id = o.id;
  if (typeof id !== 'string') return null;
  if (id === s.guestId) return GUEST_FIELDS;
  if (s.conversationIds.has(id)) return CONVERSATION_FIELDS;
  if (s.stayIds.has(id)) return STAY_FIELDS;
  if (s.attachmentIds.has(id)) return ATTACHMENT_FIELDS;
  if (typeof o.conversationId === 'string' && s.conversationIds.has(o.conversationId) && 'content' in o) {
    // A message: its text, its files, and a provider's error (which can quote the address).
    const error = isObj(o.error) ? { ...o.error, message: ERASED_TEXT } : o.error;
    return { content: ERASED_TEXT, attachments: [], error, ...('highlight' in o && { highlight: ERASED_TEXT }) };
  }
  return null;
}

/** `value` with every record in scope redacted, at any depth; the input is not changed. */
export function redact(value: unknown, s: ErasedScope): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, s));
  if (!isObj(value)) return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) out[k] = redact(v, s);
  const fields = fieldsOf(value, s);
  if (fields !== null) for (const [k, v] of Object.entries(fields)) if (k in out) out[k] = v;
  return out;
}

/**
 * An event's data and changes redacted: a changed personal field of its record reads the erased
 * value on both sides (an update's `from` is exactly the personal data the erase removes).
 */
export function redactEvent(data: unknown, changes: unknown, s: ErasedScope): { data: unknown; changes: unknown } {
  const d = redact(data, s);
  if (!isObj(changes)) return { data: d, changes };
  const c = redact(changes, s) as Obj;
  const fields = isObj(data) ? fieldsOf(data, s) : null;
  if (fields !== null && isObj(d)) {
    for (const k of Object.keys(fields)) if (k in c) c[k] = { from: d[k] ?? null, to: d[k] ?? null };
  }
  return { data: d, changes: c };
}

/** The ids whose mention in a JSON text means it may hold something to redact. */
export const scopeIds = (s: ErasedScope): string[] => [
  s.guestId,
  ...s.conversationIds,
  ...s.stayIds,
  ...s.attachmentIds,
];
