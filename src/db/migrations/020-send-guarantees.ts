// Owns the schema behind "a text reaches a guest once" (docs/channels.md, "Sent once"): a send job names its
// channel, so each channel is claimed for its own slots (a provider that hangs delays only its
// channel), and a finished job records when it finished (purged after a retention); provider
// statuses that arrive before their text's `sent` is recorded are kept in `channel_statuses`
// until it is. On PostgreSQL, `claim_sends` (migration 015) now counts an attempt when it claims
// and claims for the channels asked only; `take_channel_statuses` hands over the kept statuses
// of texts just recorded sent, after waiting for any callback still writing one of them.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

/** The advisory lock namespace of kept statuses, by provider id (src/modules/channels/statuses.ts). */
export const STATUS_LOCK = 20_261_133;

export const sendGuarantees: MigrationDef = {
  name: '020-send-guarantees',
  async up(db, t) {
    await db.schema.alterTable('channel_sends').addColumn('channel', 'text').execute();
    await sql`update channel_sends set channel = (
      select c.channel from conversations c where c.id = channel_sends.conversation_id)`.execute(db);
    await db.schema.alterTable('channel_sends').addColumn('finished_at', t.ts).execute();
    // The jobs finished before this migration are kept for the retention from now.
    await db
      .updateTable('channel_sends')
      .set({ finished_at: new Date().toISOString() })
      .where('status', '=', 'done')
      .execute();
    // The claim walks due jobs in order and skips those of channels without a free slot inside the
    // index, without reading their rows.
    await db.schema.dropIndex('channel_sends_due_idx').execute();
    await db.schema
      .createIndex('channel_sends_due_idx')
      .on('channel_sends')
      .columns(['status', 'next_attempt_at', 'channel'])
      .execute();

    await db.schema
      .createTable('channel_statuses')
      .addColumn('id', t.autoId, (c) => (t.dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('external_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('at', t.ts)
      .addColumn('error_code', 'text')
      .addColumn('error_message', 'text')
      .addColumn('received_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('channel_statuses_external_idx').on('channel_statuses').column('external_id').execute();
    await db.schema.createIndex('channel_statuses_received_idx').on('channel_statuses').column('received_at').execute();

    if (t.dialect !== 'postgres') return;
    const run = (text: string) => sql.raw(text).execute(db);
    await run('drop function claim_sends(integer, timestamptz, timestamptz, text)');
    // As in migration 015 (a plan that walks the due index in order and stops at the limit), with
    // the attempt counted at the claim and the channels to claim for (null: any).
    await run(`create function claim_sends(p_limit integer, p_at timestamptz, p_until timestamptz, p_instance text,
    p_channels text[])
  returns table (message_id text, conversation_id text, attempts integer, channel text)
  language sql volatile
  set enable_sort = off
  set enable_bitmapscan = off
as $$
  update channel_sends set locked_until = p_until, locked_by = p_instance, attempts = channel_sends.attempts + 1
  where channel_sends.message_id in (
    select s.message_id from channel_sends s
    where s.status = 'pending'
      and (s.locked_until is null or s.locked_until < p_at)
      and s.next_attempt_at <= p_at
      and (p_channels is null or s.channel = any(p_channels))
      and not exists (
        select 1 from channel_sends o
        where o.conversation_id = s.conversation_id and o.status = 'pending'
          and (o.created_at, o.message_id) < (s.created_at, s.message_id)
      )
    order by s.next_attempt_at
    limit p_limit
    for update of s skip locked
  )
  returning channel_sends.message_id, channel_sends.conversation_id, channel_sends.attempts, channel_sends.channel
$$`);
    // Each statement of a plpgsql function reads what committed before it began: the delete sees a
    // status a callback committed while this waited for its lock (read committed).
    await run(`create function take_channel_statuses(p_ids text[])
  returns table (id bigint, external_id text, status text, at timestamptz, error_code text, error_message text)
  language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(${STATUS_LOCK}, k)
    from (select distinct hashtext(x) as k from unnest(p_ids) as x order by 1) as keys;
  return query delete from channel_statuses s where s.external_id = any(p_ids)
    returning s.id, s.external_id, s.status, s.at, s.error_code, s.error_message;
end $$`);
  },
};
