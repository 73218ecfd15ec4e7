// Owns the rules of API keys: an expiry must lie in the future, a revoked key can be neither
// changed nor rotated (409), a missing one is a 404, and revoking a key turns off the webhooks it
// owns (docs/integrations.md, "Webhooks made with a key"). Every write is one transaction of the
// store, its audit entry written inside it.
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, fieldError, notFound } from '../../lib/errors.js';
import type { AuditTrail } from '../audit/trail.js';
import { staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { deactivateOwnedBy } from '../webhooks/repository.js';
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
export async function createApiKey(deps: ApiKeyDeps, user: AuthUser, body: CreateApiKeyInput, audit: AuditTrail) {
  const expiresAt = body.expiresAt ?? null;
  if (expiresAt !== null && Date.parse(expiresAt) <= Date.now()) {
    throw fieldError('expiresAt', 'must be in the future');
  }
  const { view, key } = await deps.store.transact(async (tx) => {
    const made = await insertApiKey(tx, deps.hasher, {
      name: body.name,
      scopes: body.scopes,
      expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
      createdBy: user.id,
    });
    await audit.record(tx, 'api_key.created', { type: 'api_key', id: made.view.id });
    return made;
  });
  return { ...view, key };
}

/** Renames a key or replaces its scopes; narrowed scopes hold from the next request, everywhere. */
export function updateApiKeyFields(
  store: Store,
  id: string,
  body: UpdateApiKeyInput,
  audit: AuditTrail,
): Promise<ApiKeyView> {
  return store.transact(async (tx) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    if (current.revokedAt !== null || !(await updateApiKey(tx, id, body))) throw revoked(id);
    await audit.record(tx, 'api_key.updated', { type: 'api_key', id });
    return (await findApiKey(tx, id))!;
  });
}

/**
 * Revokes a key at once, and in the same transaction turns off every webhook it owns (each a
 * `webhook.disabled` event): once this commits, no delivery to them starts. Revoking a revoked key
 * again changes nothing and records nothing: it answers as the first revocation did. Returns when
 * the key was revoked.
 */
export function revokeKey(store: Store, user: AuthUser, id: string, audit: AuditTrail): Promise<string> {
  return withEvents(store, async (tx, outbox) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    if (current.revokedAt !== null) return current.revokedAt;
    await revokeApiKey(tx, id);
    for (const hook of await deactivateOwnedBy(tx, id)) {
      outbox.add({ type: 'webhook.disabled', actor: staffActor(user), data: hook });
    }
    await audit.record(tx, 'api_key.revoked', { type: 'api_key', id });
    return (await findApiKey(tx, id))!.revokedAt!;
  });
}

/** A new secret for the key; the old one works `graceSeconds` longer. The new text is returned once. */
export function rotateKey(deps: ApiKeyDeps, id: string, graceSeconds: number, audit: AuditTrail) {
  return deps.store.transact(async (tx) => {
    const current = await findApiKey(tx, id);
    if (current === undefined) throw missing(id);
    const key = await rotateApiKey(tx, deps.hasher, id, graceSeconds);
    if (key === undefined) throw revoked(id);
    await audit.record(tx, 'api_key.rotated', { type: 'api_key', id });
    return { ...(await findApiKey(tx, id))!, key };
  });
}
