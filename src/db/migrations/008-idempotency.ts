// Owns the schema of Idempotency-Key records (docs/integrations.md): the answer of a request, written in
// the same transaction as its change, kept 24 hours per caller, route and key.
import type { MigrationDef } from './helpers.js';

export const idempotency: MigrationDef = {
  name: '008-idempotency',
  async up(db, t) {
    await db.schema
      .createTable('idempotency_keys')
      // `stf:<staff id>` or `key:<API key id>`.
      .addColumn('caller', 'text', (c) => c.notNull())
      // Method and route pattern: `POST /api/v1/conversations/:id/messages`.
      .addColumn('route', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      // SHA-256 of the URL and body: the same key with another request is refused.
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('status', 'integer', (c) => c.notNull())
      // The answer's JSON, sealed (AES-256-GCM): answers may carry a secret shown once.
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('expires_at', t.ts, (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['caller', 'route', 'key'])
      .execute();
    await db.schema
      .createIndex('idempotency_keys_expires_idx')
      .on('idempotency_keys')
      .columns(['expires_at'])
      .execute();
  },
};
