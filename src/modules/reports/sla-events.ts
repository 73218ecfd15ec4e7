// Owns writing the SLA events (docs/reports.md, "SLA events"): `sla.at_risk` and `sla.breached`
// for a conversation's running targets, `task.overdue` for a task. Each runs as a job
// (src/modules/reports/sla-jobs.ts) that re-reads its row, writes the events whose moment has come
// and that were not reported yet, records what it reported and moves itself to the next moment,
// all in one transaction with the job's own record (`ctx.complete`): so each event is written once,
// whichever instance runs it, however often, and after a restart that missed the moment.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Store } from '../../db/store.js';
import type { Tx } from '../../db/types.js';
import { SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import type { JobHandler, JobRunner } from '../jobs/runner.js';
import { SLA_COLUMNS_OF_C, slaOfRow } from './sla.js';
import { dueMoments, nextSlaRun, overdueMoment, owedOf, SLA_MOMENT_KIND, TASK_OVERDUE_KIND } from './sla-jobs.js';
import { num, rdb } from './tables.js';

type Jobs = Pick<JobRunner, 'enqueue'>;
const iso = (ms: number) => new Date(ms).toISOString();

/** Takes the row's lock first on PostgreSQL: the order a write path takes it, row then job. */
async function lockRow(tx: Tx, table: 'conversations' | 'tasks', id: string) {
  let q = tx.selectFrom(table).select('id').where('id', '=', id);
  if (tx.dialect === 'postgres') q = q.forUpdate();
  return q.executeTakeFirst();
}

export function slaMomentHandler(store: Store, jobs: Jobs): JobHandler {
  return {
    kind: SLA_MOMENT_KIND,
    retryBaseMs: 1000,
    async run(job, ctx) {
      const { conversationId: id } = job.payload as { conversationId: string };
      await withEvents(store, async (tx, outbox) => {
        const found = await lockRow(tx, 'conversations', id);
        await ctx.complete(tx);
        if (found === undefined) return;
        const row = await rdb(tx)
          .selectFrom('conversations as c')
          .innerJoin('report_conversations as r', 'r.id', 'c.id')
          .select(['c.assignee', ...SLA_COLUMNS_OF_C, 'r.sla_reported', 'r.sla_owed'])
          .where('c.id', '=', id)
          .executeTakeFirst();
        if (row === undefined) return;
        const s = slaOfRow(row);
        const now = Date.now();
        let reported = num(row.sla_reported);
        const owed = owedOf(row.sla_owed);
        // In time order, at_risk before breached: the moments a restart missed come out as they fell.
        const due = dueMoments(s, owed, reported, now);
        for (const m of due) {
          outbox.add({
            type: m.kind,
            actor: SYSTEM,
            data: { conversationId: id, target: m.target, dueAt: iso(m.dueAt) },
            conversationId: id,
            assignee: row.assignee,
          });
          reported = m.at;
        }
        // An owed moment not come yet by this instance's clock (another's ran ahead) stays owed.
        const left = owed.filter((m) => m.at > now);
        if (due.length > 0 || left.length !== owed.length) {
          await rdb(tx)
            .updateTable('report_conversations')
            .set({ sla_reported: reported, sla_owed: left.length === 0 ? null : JSON.stringify(left) })
            .where('id', '=', id)
            .execute();
        }
        const next = nextSlaRun(s, left, reported);
        if (next !== null) {
          await jobs.enqueue(tx, { kind: SLA_MOMENT_KIND, key: id, runAt: iso(next), payload: { conversationId: id } });
        }
      });
    },
  };
}

export function taskOverdueHandler(store: Store, jobs: Jobs): JobHandler {
  return {
    kind: TASK_OVERDUE_KIND,
    retryBaseMs: 1000,
    async run(job, ctx) {
      const { taskId: id } = job.payload as { taskId: string };
      await withEvents(store, async (tx, outbox) => {
        const found = await lockRow(tx, 'tasks', id);
        await ctx.complete(tx);
        if (found === undefined) return;
        const row = await rdb(tx)
          .selectFrom('tasks as t')
          .innerJoin('report_tasks as r', 'r.id', 't.id')
          .select(['t.assignee', 't.conversation_id', 'r.deadline', 'r.status', 'r.overdue_reported'])
          .where('t.id', '=', id)
          .executeTakeFirst();
        if (row === undefined) return;
        const at = overdueMoment(num(row.deadline), row.status, num(row.overdue_reported));
        if (at === null) return;
        if (at > Date.now()) {
          // Moved later meanwhile by a change that did not reach this job: wait for the new deadline.
          await jobs.enqueue(tx, { kind: TASK_OVERDUE_KIND, key: id, runAt: iso(at), payload: { taskId: id } });
          return;
        }
        outbox.add({
          type: 'task.overdue',
          actor: SYSTEM,
          data: { taskId: id, deadline: iso(at) },
          taskId: id,
          conversationId: row.conversation_id,
          assignee: row.assignee,
        });
        await rdb(tx).updateTable('report_tasks').set({ overdue_reported: at }).where('id', '=', id).execute();
      });
    },
  };
}

/** Registers the SLA event jobs' handlers with this instance's runner. */
export default fp(
  async function slaEvents(app: FastifyInstance) {
    app.jobs.register(slaMomentHandler(app.ctx.store, app.jobs));
    app.jobs.register(taskOverdueHandler(app.ctx.store, app.jobs));
  },
  { name: 'sla-events', dependencies: ['jobs-runtime'] },
);
