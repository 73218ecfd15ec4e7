// Owns when the SLA event jobs run (docs/reports.md, "SLA events"): one `sla.conversation` job per
// conversation and one `sla.task` job per task, keyed by its id, written or moved in the
// transaction that changes the due times (a wait starts or ends, a close, a reopening; a task's
// deadline or status), due at the next moment not yet reported. A moment already past when the
// job is written (the change came in before the job ran) makes it due at once. The handlers live in
// src/modules/reports/sla-events.ts.
import type { Executor } from '../../db/types.js';
import { cancelJob, insertJob } from '../jobs/repository.js';
import { type ConversationSla, nextConversationMoments, taskOverdueMoment } from './sla.js';

/** The job kind that writes a conversation's `sla.at_risk` and `sla.breached`; key: its id. */
export const SLA_MOMENT_KIND = 'sla.conversation';
/** The job kind that writes `task.overdue`; key: the task's id. */
export const TASK_OVERDUE_KIND = 'sla.task';

/** The conversation's next SLA moment after `reported` (the latest one reported), or none. */
export const nextSlaMoment = (s: ConversationSla, reported: number | null) =>
  nextConversationMoments(s, reported ?? Number.NEGATIVE_INFINITY)[0];

/** Writes, moves or cancels the conversation's SLA job in `x`, after its row (lock order). */
export async function scheduleConversationSla(
  x: Executor,
  id: string,
  s: ConversationSla,
  reported: number | null,
): Promise<void> {
  const next = nextSlaMoment(s, reported);
  if (next === undefined) await cancelJob(x, SLA_MOMENT_KIND, id);
  else
    await insertJob(x, { kind: SLA_MOMENT_KIND, key: id, runAt: new Date(next.at), payload: { conversationId: id } });
}

/** The moment a task's `task.overdue` is due, or null: never once done, never twice for one deadline. */
export function overdueMoment(deadline: number | null, status: string, reported: number | null): number | null {
  const at = taskOverdueMoment({ deadline, status }, Number.NEGATIVE_INFINITY);
  return at === null || at === reported ? null : at;
}

/** Writes, moves or cancels the task's overdue job in `x`, after its row (lock order). */
export async function scheduleTaskOverdue(x: Executor, id: string, at: number | null): Promise<void> {
  if (at === null) await cancelJob(x, TASK_OVERDUE_KIND, id);
  else await insertJob(x, { kind: TASK_OVERDUE_KIND, key: id, runAt: new Date(at), payload: { taskId: id } });
}
