// Owns what keeps the three claims (due jobs, texts' sends, webhook deliveries) right whatever the
// planner's statistics say. Those tables' rows are finished and removed, so autovacuum often
// analyzes them nearly empty; a burst then writes thousands that the planner takes for none.
//
// A claim leases its candidates, chosen FOR UPDATE SKIP LOCKED with a LIMIT. Written as `where id
// in (candidates)`, the planner may join them and run them again for each row of the table: each
// run skips the rows the last one locked, so one claim leased far more than its limit (every due
// text, once) to one instance. The candidates are now an array, `where id = any(array(candidates))`,
// whose select runs once before the statement: the jobs and deliveries claims in their
// repositories (src/modules/jobs/repository.ts, chosenOnce), `claim_sends` here.
//
// Jobs: a claim asks for one kind's due jobs, oldest first. Neither jobs_due (run_at, id: every kind)
// nor jobs_live_key (kind, key: no order) answers that, and a planner that takes the table for
// empty costs every path alike: before a burst of 10,000 steps of one journey it read every pending
// job of the kind through jobs_live_key and sorted them, at every claim and every look for due
// work, and through jobs_due a claim of text sends would walk every due step first. jobs_kind_due
// (kind, run_at, id) now answers claims and looks in order; jobs_due goes (the next due time is
// read kind by kind); jobs_live_key keeps its uniqueness for keyed jobs only (a job without a key
// never conflicts), so a claim, which names no key, cannot use it.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const claims: MigrationDef = {
  name: '036-claims',
  async up(db, t) {
    await db.schema
      .createIndex('jobs_kind_due')
      .on('jobs')
      .columns(['kind', 'run_at', 'id'])
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    await db.schema.dropIndex('jobs_due').execute();
    await db.schema.dropIndex('jobs_live_key').execute();
    // The predicate as src/modules/jobs/repository.ts writes it in its conflict target (KEYED).
    await db.schema
      .createIndex('jobs_live_key')
      .on('jobs')
      .columns(['kind', 'key'])
      .unique()
      .where(sql<boolean>`status = 'pending' and key is not null`)
      .execute();
    if (t.dialect !== 'postgres') return;
    // As in migration 020, with the candidates read once.
    await sql
      .raw(`create or replace function claim_sends(p_limit integer, p_at timestamptz, p_until timestamptz,
    p_instance text, p_channels text[])
  returns table (message_id text, conversation_id text, attempts integer, channel text)
  language sql volatile
  set enable_sort = off
  set enable_bitmapscan = off
as $$
  update channel_sends set locked_until = p_until, locked_by = p_instance, attempts = channel_sends.attempts + 1
  where channel_sends.message_id = any(array(
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
  ))
  returning channel_sends.message_id, channel_sends.conversation_id, channel_sends.attempts, channel_sends.channel
$$`)
      .execute(db);
  },
};
