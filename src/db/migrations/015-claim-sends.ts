// Owns `claim_sends`, PostgreSQL's claim of due send jobs (src/modules/channels/sends-repository.ts
// claimSends), as a function whose plan does not depend on the table's statistics. The send queue
// is empty most of the time and then fills in a burst: planned on statistics taken while it was
// empty (every row estimate 1), the claim read every pending job, tested each for an earlier one of
// its conversation through a bitmap scan of all pending jobs, and sorted the lot to keep the oldest
// few (7.5 ms per claim under the bench's burst; 2.7 s with 5,000 jobs and deleted ones in the
// index). Until autovacuum analyzes the table again (up to a minute after the burst begins, or
// never where autovacuum is off) every claim did that. With sorts and bitmap scans off for this
// one statement, its only plan walks the due index in order and stops at the limit: each job is
// one probe of its conversation's index. SQLite plans the same statement that way on its own.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const claimSends: MigrationDef = {
  name: '015-claim-sends',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    await sql
      .raw(
        `create function claim_sends(p_limit integer, p_at timestamptz, p_until timestamptz, p_instance text)
  returns table (message_id text, conversation_id text, attempts integer)
  language sql volatile
  set enable_sort = off
  set enable_bitmapscan = off
as $$
  update channel_sends set locked_until = p_until, locked_by = p_instance
  where channel_sends.message_id in (
    select s.message_id from channel_sends s
    where s.status = 'pending'
      and (s.locked_until is null or s.locked_until < p_at)
      and s.next_attempt_at <= p_at
      and not exists (
        select 1 from channel_sends o
        where o.conversation_id = s.conversation_id and o.status = 'pending'
          and (o.created_at, o.message_id) < (s.created_at, s.message_id)
      )
    order by s.next_attempt_at
    limit p_limit
    for update of s skip locked
  )
  returning channel_sends.message_id, channel_sends.conversation_id, channel_sends.attempts
$$`,
      )
      .execute(db);
  },
};
