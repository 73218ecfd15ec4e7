// Owns reading, in a few batched queries, what decides whether the callers of open event streams
// still have access (stream-access.ts): their staff rows, which of their token ids are revoked, and
// their API key rows. Always read from the store itself, which every instance shares, never from a
// cache, so a change made on any instance is seen by the next check.
import type { Executor } from '../../db/types.js';

/** Ids per query: far below either store's limit on bound parameters. */
const CHUNK = 500;

async function inChunks<T>(ids: readonly string[], read: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const rows: T[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) rows.push(...(await read(ids.slice(i, i + CHUNK))));
  return rows;
}

/** The staff rows of these ids (a missing id: no row). */
export function staffAccessRows(db: Executor, ids: readonly string[]) {
  return inChunks(ids, (chunk) =>
    db.selectFrom('staff').select(['id', 'role', 'active', 'tokens_valid_after']).where('id', 'in', chunk).execute(),
  );
}
export type StaffAccessRow = Awaited<ReturnType<typeof staffAccessRows>>[number];

/** Which of these token ids are revoked (logout, refresh). */
export async function revokedAmong(db: Executor, jtis: readonly string[]): Promise<Set<string>> {
  const rows = await inChunks(jtis, (chunk) =>
    db.selectFrom('revoked_tokens').select('jti').where('jti', 'in', chunk).execute(),
  );
  return new Set(rows.map((r) => r.jti));
}

/** The API key rows of these ids, with what authenticating a key reads (a missing id: no row). */
export function keyAccessRows(db: Executor, ids: readonly string[]) {
  return inChunks(ids, (chunk) =>
    db
      .selectFrom('api_keys')
      .select(['id', 'scopes', 'secret_hash', 'previous_hash', 'previous_expires_at', 'expires_at', 'revoked_at'])
      .where('id', 'in', chunk)
      .execute(),
  );
}
export type KeyAccessRow = Awaited<ReturnType<typeof keyAccessRows>>[number];
