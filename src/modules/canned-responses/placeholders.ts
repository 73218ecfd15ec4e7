// Owns the placeholders a canned response may hold ({{guest.name}} …, docs/productivity.md): which
// names exist, finding the unknown ones when a response is saved, and filling them in for one
// conversation when it is sent. Pure: the values are read by the caller (send.ts).

/** Every placeholder name, as written between double braces. */
export const PLACEHOLDERS = [
  'guest.name',
  'guest.firstName',
  'stay.room',
  'stay.checkIn',
  'stay.checkOut',
  'hotel.name',
  'staff.name',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

const KNOWN = new Set<string>(PLACEHOLDERS);
/** `{{ name }}`, spaces inside the braces allowed. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The distinct placeholder names in `text` that are not known, in the order they appear. */
export function unknownPlaceholders(text: string): string[] {
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]!))].filter((name) => !KNOWN.has(name));
}

/** `text` with each known placeholder replaced by its value (an empty one when it has none). */
export function fillPlaceholders(text: string, values: Partial<Record<Placeholder, string>>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) =>
    KNOWN.has(name) ? (values[name as Placeholder] ?? '') : whole,
  );
}

/** A guest's first name: the first word of the name. */
export const firstNameOf = (name: string): string => name.trim().split(/\s+/u)[0] ?? '';
