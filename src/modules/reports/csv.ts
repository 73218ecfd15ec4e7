// Owns the CSV form of a report (RFC 4180: CRLF line ends, fields quoted when they hold a comma,
// quote or line break), asked for with `Accept: text/csv`.

const field = (v: unknown): string => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};

export const csvOf = (rows: unknown[][]): string => `${rows.map((r) => r.map(field).join(',')).join('\r\n')}\r\n`;

/** Leaves of a nested object as dotted paths, in order. */
export function flatten(o: Record<string, unknown>, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const [k, v] of Object.entries(o)) {
    const path = prefix === '' ? k : `${prefix}.${k}`;
    if (v !== null && typeof v === 'object') out.push(...flatten(v as Record<string, unknown>, path));
    else out.push([path, v]);
  }
  return out;
}

/** The summary: one row per figure, its value in the period and in the previous one. */
export function summaryCsv(s: { previous: Record<string, unknown> } & Record<string, unknown>): string {
  const { previous, from, to, businessHours, ...now } = s;
  const prev = new Map(flatten(previous));
  return csvOf([['figure', 'value', 'previous'], ...flatten(now).map(([k, v]) => [k, v, prev.get(k)])]);
}

/** One row per item, the columns every item's leaves. */
export function tableCsv(items: Record<string, unknown>[]): string {
  const columns: string[] = [];
  const flat = items.map((i) => new Map(flatten(i)));
  for (const f of flat) for (const k of f.keys()) if (!columns.includes(k)) columns.push(k);
  return csvOf([columns, ...flat.map((f) => columns.map((c) => f.get(c)))]);
}

/** Whether the caller asked for CSV. */
export const wantsCsv = (accept: string | undefined): boolean =>
  accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept);
