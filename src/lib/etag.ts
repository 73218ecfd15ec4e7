// Owns entity tags (docs/integrations.md, "Concurrent edits"): the ETag of a record as the API shows it, comparing it with
// If-Match and If-None-Match, and what a write route declares so its If-Match can be checked: the
// record as a GET of it shows it, read in the write's own transaction.
import { hash } from 'node:crypto';
import type { Executor } from '../db/types.js';

/**
 * A strong ETag of a record: a digest of its JSON as the API answers it. The one-shot `hash` gives
 * the digest createHash would, without a Hash object per answer.
 */
export const etagOf = (record: unknown): string =>
  `"${hash('sha256', JSON.stringify(record), 'base64url').slice(0, 27)}"`;

/** The entity tags listed in an If-Match or If-None-Match header; `*` stands for any. */
function tagsOf(header: string): string[] {
  return header
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** If-Match: strong comparison (RFC 9110 §13.1.1); a weak tag never matches. */
export const ifMatchHolds = (header: string, etag: string): boolean =>
  tagsOf(header).some((t) => t === '*' || t === etag);

/** If-None-Match: weak comparison (RFC 9110 §13.1.2): true when the client's copy is current. */
export const isNotModified = (header: string, etag: string): boolean =>
  tagsOf(header).some((t) => t === '*' || t.replace(/^W\//, '') === etag);

/** What a PATCH, PUT or DELETE route declares in `config.current` so If-Match can be checked. */
export interface Current {
  /** The record's table and key column, locked (PostgreSQL: FOR UPDATE) before the check. */
  table: string;
  column: string;
  /** The path parameter that names the record. */
  param: string;
  /** The record as a GET of it answers it (undefined when missing: the handler answers 404). */
  read(x: Executor, key: string): Promise<unknown>;
  /**
   * The write creates the record when it is missing (a PUT of a custom setting). If-Match names a
   * current record, so it then fails (412), as RFC 9110 §13.1.1 says; for other writes a missing
   * record is answered as it would be without If-Match (404).
   */
  upsert?: boolean;
}

/** The usual declaration: a table keyed by `id`, read by its repository's find function. */
export const currentById = (table: string, read: (x: Executor, id: string) => Promise<unknown>): Current => ({
  table,
  column: 'id',
  param: 'id',
  read,
});
