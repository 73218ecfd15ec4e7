// Owns web_visitors: which guest each anonymous web-chat visitor is, per caller (the API key or
// staff member whose widget named it). A visitor id is the widget's own and may be what its browser
// keeps to be known again, so only its SHA-256 is kept: a copy of the table names no visitor.
import type { MigrationDef } from './helpers.js';

export const webVisitors: MigrationDef = {
  name: '023-web-visitors',
  async up(db, t) {
    await db.schema
      .createTable('web_visitors')
      .addColumn('caller_id', 'text', (c) => c.notNull())
      .addColumn('visitor_hash', 'text', (c) => c.notNull())
      .addColumn('guest_id', 'text', (c) => c.notNull().references('guests.id'))
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addPrimaryKeyConstraint('web_visitors_pk', ['caller_id', 'visitor_hash'])
      .execute();
  },
};
