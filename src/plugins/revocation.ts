// Owns token revocation: `revoke(jti, exp)` records a token id as revoked until the token would
// have expired anyway (logout, refresh, password change), and an hourly purge forgets the ones
// past that. The gate (gate.ts) refuses a revoked token.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Tx } from '../db/executor.js';
import type { Store } from '../db/store.js';
import type { Counter } from '../lib/rate-limiter.js';

/**
 * Revokes a token id until its expiry. Resolves true when this call revoked it, false when it
 * already was (a concurrent logout or refresh won). `alsoInTx` runs in the revocation's own
 * transaction when this call revoked it (a logout's audit entry).
 */
export type Revoke = (jti: string, expSec: number, alsoInTx?: (tx: Tx) => Promise<void>) => Promise<boolean>;

declare module 'fastify' {
  interface FastifyInstance {
    revoke: Revoke;
  }
}

const PURGE_EVERY_MS = 3600_000;

export default fp(
  async function revocation(app: FastifyInstance, opts: { store: Store; counter: Counter }) {
    const { store, counter } = opts;
    const revoke: Revoke = (jti, expSec, alsoInTx) =>
      store.transact(async (tx) => {
        const r = await tx
          .insertInto('revoked_tokens')
          .values({ jti, expires_at: expSec })
          .onConflict((oc) => oc.column('jti').doNothing())
          .executeTakeFirst();
        // Instances keeping staff rows under the shared generation read them again (src/plugins/gate.ts).
        tx.onCommit(() => void counter.bumpGeneration());
        const revoked = Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
        if (revoked && alsoInTx !== undefined) await alsoInTx(tx);
        return revoked;
      });
    app.decorate('revoke', revoke);

    // Revocations are kept only until the token would have expired anyway.
    const purge = setInterval(() => {
      const now = Math.floor(Date.now() / 1000);
      store
        .deleteFrom('revoked_tokens')
        .where('expires_at', '<', now)
        .execute()
        .catch(() => {});
    }, PURGE_EVERY_MS);
    purge.unref();
    app.addHook('onClose', async () => clearInterval(purge));
  },
  { name: 'revocation' },
);
