// Owns the schema of event stream tickets (docs/events.md): one row per ticket not yet used, kept
// under the SHA-256 of the ticket (never the ticket itself), with what admitted the caller who made
// it, so the stream it opens is bound to that caller and its access. A use deletes the row.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const streamTickets: MigrationDef = {
  name: '022-stream-tickets',
  async up(db, t) {
    await db.schema
      .createTable('stream_tickets')
      // Hex SHA-256 of the ticket: a ticket carries 256 random bits, so a plain digest is enough.
      .addColumn('hash', 'text', (c) => c.primaryKey())
      .addColumn('caller_kind', 'text', (c) => c.notNull().check(sql`caller_kind in ('staff', 'api_key')`))
      // A staff id or an API key id.
      .addColumn('caller_id', 'text', (c) => c.notNull())
      // A staff token's id, issue and expiry times (seconds); null for a key.
      .addColumn('jti', 'text')
      .addColumn('issued_at', 'bigint')
      .addColumn('token_expires_at', 'bigint')
      // A key: the stored hash its secret matched (the current one, or the replaced one in its grace).
      .addColumn('secret_hash', 'text')
      .addColumn('expires_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('stream_tickets_expires_idx').on('stream_tickets').column('expires_at').execute();
  },
};
