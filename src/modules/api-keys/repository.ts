// Owns API key rows: reads, writes, what authentication reads of a key, the throttled lastUsedAt
// write, and the mapping of a row to its API shape. The secret is never stored, only its hash.
import { paginate } from '../../db/paginate.js';
import { type Param, prepared, type RowOf } from '../../db/prepared.js';
import { nowIso, toIso, toJson } from '../../db/store.js';
import type { ApiKeyRow, Executor } from '../../db/types.js';
import type { Scope } from '../../lib/auth.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyView } from './schemas.js';
import { newSecret, type SecretHasher } from './secret.js';

const COLUMNS = [
  'id',
  'name',
  'scopes',
  'expires_at',
  'last_used_at',
  'revoked_at',
  'created_at',
  'updated_at',
] as const;
type ApiKeyListRow = Pick<ApiKeyRow, (typeof COLUMNS)[number]>;

const isoOrNull = (v: string | Date | null): string | null => (v === null ? null : toIso(v));

export function toApiKey(row: ApiKeyListRow): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    scopes: JSON.parse(row.scopes) as Scope[],
    expiresAt: isoOrNull(row.expires_at),
    lastUsedAt: isoOrNull(row.last_used_at),
    revokedAt: isoOrNull(row.revoked_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function findApiKey(x: Executor, id: string): Promise<ApiKeyView | undefined> {
  const row = await x.selectFrom('api_keys').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toApiKey(row);
}

/** API keys, newest first. */
export const listApiKeys = paginate<Record<string, never>, ApiKeyListRow>({
  name: 'api-keys',
  from: (db) => db.selectFrom('api_keys'),
  where: (q) => q,
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  count: (x) => x.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')),
  shapeOf: () => '',
  values: () => ({}),
});

/** Scopes are stored sorted, so two keys with the same scopes store the same text. */
const scopesJson = (scopes: readonly Scope[]) => toJson([...new Set(scopes)].sort());

export async function insertApiKey(
  x: Executor,
  hasher: SecretHasher,
  input: { name: string; scopes: readonly Scope[]; expiresAt: string | null; createdBy: string | null },
): Promise<{ view: ApiKeyView; key: string }> {
  const now = nowIso();
  const id = newId('key');
  const { secret, key } = newSecret(id);
  const row = {
    id,
    name: input.name,
    scopes: scopesJson(input.scopes),
    secret_hash: hasher.hash(secret),
    previous_hash: null,
    previous_expires_at: null,
    expires_at: input.expiresAt,
    last_used_at: null,
    revoked_at: null,
    created_by: input.createdBy,
    created_at: now,
    updated_at: now,
  };
  await x.insertInto('api_keys').values(row).execute();
  return { view: toApiKey(row), key };
}

/** Changes name and scopes of a key that is not revoked; false when there is none. */
export async function updateApiKey(
  x: Executor,
  id: string,
  c: { name?: string; scopes?: readonly Scope[] },
): Promise<boolean> {
  const r = await x
    .updateTable('api_keys')
    .set({
      ...(c.name !== undefined && { name: c.name }),
      ...(c.scopes !== undefined && { scopes: scopesJson(c.scopes) }),
      updated_at: nowIso(),
    })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Revokes a key (it and any grace-period secret stop at once); false when none was live. */
export async function revokeApiKey(x: Executor, id: string): Promise<boolean> {
  const now = nowIso();
  const r = await x
    .updateTable('api_keys')
    .set({ revoked_at: now, previous_hash: null, previous_expires_at: null, updated_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Gives a live key a new secret; the current one keeps working for `graceSeconds` (none at 0).
 * Returns the new key text, or undefined when there is no live key of that id.
 */
export async function rotateApiKey(
  x: Executor,
  hasher: SecretHasher,
  id: string,
  graceSeconds: number,
): Promise<string | undefined> {
  const current = await x
    .selectFrom('api_keys')
    .select(['secret_hash'])
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (current === undefined) return undefined;
  const { secret, key } = newSecret(id);
  const now = Date.now();
  await x
    .updateTable('api_keys')
    .set({
      secret_hash: hasher.hash(secret),
      previous_hash: graceSeconds > 0 ? current.secret_hash : null,
      previous_expires_at: graceSeconds > 0 ? new Date(now + graceSeconds * 1000).toISOString() : null,
      updated_at: new Date(now).toISOString(),
    })
    .where('id', '=', id)
    .execute();
  return key;
}

/** What authenticating a key reads: its hashes, limits and scopes. */
export const keyForAuth = prepared((db, p: Param<{ id: string }>) =>
  db
    .selectFrom('api_keys')
    .select(['id', 'name', 'scopes', 'secret_hash', 'previous_hash', 'previous_expires_at', 'expires_at', 'revoked_at'])
    .where('id', '=', p('id')),
);
export type KeyAuthRow = RowOf<typeof keyForAuth>;

/** Sets lastUsedAt to `now` unless it was set less than a minute before (another instance may have). */
export const touchApiKey = prepared((db, p: Param<{ id: string; now: string; before: string }>) =>
  db
    .updateTable('api_keys')
    .set({ last_used_at: p('now') })
    .where('id', '=', p('id'))
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', p('before'))])),
);
