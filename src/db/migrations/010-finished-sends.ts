// Owns dropping the jobs of sent texts: from now on a job row is deleted with the attempt that
// sends its text, so the table the dispatcher claims from holds pending work (and the jobs of
// failed texts, which a retry reuses) only. This removes the sent ones earlier versions kept.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const finishedSends: MigrationDef = {
  name: '010-finished-sends',
  async up(db) {
    await db
      .deleteFrom('channel_sends')
      .where('status', '=', 'done')
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('messages as m')
            .select(sql.lit(1).as('one'))
            .whereRef('m.id', '=', 'channel_sends.message_id')
            .where('m.delivery_status', '!=', 'failed'),
        ),
      )
      .execute();
  },
};
