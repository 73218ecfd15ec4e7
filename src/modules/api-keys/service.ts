// Owns the rules of API keys: an expiry must lie in the future, a revoked key can be neither
// changed nor rotated (409), a missing one is a 404. Every write is one transaction of the store.
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, fieldError, notFound } from '../../lib/errors.js';
import { findApiKey, insertApiKey, revokeApiKey, rotateApiKey, updateApiKey } from './repository.js';
import type { ApiKeyView, CreateApiKeyInput, UpdateApiKeyInput } from './schemas.js';
import type { SecretHasher } from './secret.js';

export interface ApiKeyDeps {
  store: Store;
  hasher: SecretHasher;
}

const missing = (id: string) => notFound('API key', id);
const revoked = (id: string) => conflict(`API key ${id} is revoked; create a new one`);

export async function getApiKey(store: Store, id: string): Promise<ApiKeyView> {
  const key = await findApiKey(store, id);
  if (key === undefined) throw missing(id);
  return key;
}

/** Creates a key; its text (`gma_…`) is returned this once. */
export async function createApiKey(deps: ApiKeyDeps, user: AuthUser, body: CreateApiKeyInput) {
  const expiresAt = body.expiresAt ?? null;
  if (expiresAt !== null && Date.parse(expiresAt) <= Date.now()) {
    throw fieldError('expiresAt', 'must be in the future');
  }
  const { view, key } = await deps.store.transact((tx) =>
    insertApiKey(tx, deps.hasher, {
      name: body.name,
      scopes: body.scopes,
      expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
      createdBy: user.id,
    }),
  );
  return { ...view, key };
}

/** Renames a key or replaces its scopes; narrowed scopes hold from the next request, everywhere. */
export function updateApiKeyFields(store: Store, id: string, body: UpdateApiKeyInput): Promise<ApiKeyView> {
  return store.transact(async (tx) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    if (current.revokedAt !== null || !(await updateApiKey(tx, id, body))) throw revoked(id);
    return (await findApiKey(tx, id))!;
  });
}

/** Revokes a key at once; revoking a revoked key again answers the same. */
export function revokeKey(store: Store, id: string): Promise<void> {
  return store.transact(async (tx) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    await revokeApiKey(tx, id);
  });
}

/** A new secret for the key; the old one works `graceSeconds` longer. The new text is returned once. */
export function rotateKey(deps: ApiKeyDeps, id: string, graceSeconds: number) {
  return deps.store.transact(async (tx) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    const key = await rotateApiKey(tx, deps.hasher, id, graceSeconds);
    if (key === undefined) throw revoked(id);
    return { ...(await findApiKey(tx, id))!, key };
  });
}
