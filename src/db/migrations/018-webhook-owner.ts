// Owns the owner of a webhook (docs/integrations.md): the API key that created or last changed it, null
// when staff made it or an admin took it over. Revoking the key turns its webhooks off, and a
// webhook whose key has expired is sent nothing (src/modules/webhooks). Keys are never deleted
// (a revoked key stays listed), so the reference always names a row.
import type { MigrationDef } from './helpers.js';

export const webhookOwner: MigrationDef = {
  name: '018-webhook-owner',
  async up(db) {
    await db.schema
      .alterTable('webhooks')
      .addColumn('api_key_id', 'text', (c) => c.references('api_keys.id'))
      .execute();
    await db.schema.createIndex('webhooks_api_key_idx').on('webhooks').column('api_key_id').execute();
  },
};
