// Owns when the SLA event jobs run (docs/reports.md, "SLA events"): one `sla.conversation` job per
// conversation and one `sla.task` job per task, keyed by its id, written or moved in the
// transaction that changes the due times (a wait starts or ends, a close, a reopening; a task's
// deadline or status), due at the next moment not yet reported. A moment that came before the job
// ran but whose target the change ends (a reply or a close within the runner's lag) is kept as
// owed and makes the job due at once: it is still reported. The handlers live in
// src/modules/reports/sla-events.ts.
import type { Executor } from '../../db/types.js';
import { cancelJob, insertJob } from '../jobs/repository.js';
import { type ConversationSla, nextConversationMoments, type SlaMoment, taskOverdueMoment } from './sla.js';

/** The job kind that writes a conversation's `sla.at_risk` and `sla.breached`; key: its id. */
export const SLA_MOMENT_KIND = 'sla.conversation';
/** The job kind that writes `task.overdue`; key: the task's id. */
export const TASK_OVERDUE_KIND = 'sla.task';

const after = (reported: number | null) => reported ?? Number.NEGATIVE_INFINITY;
const same = (a: SlaMoment, b: SlaMoment) =>
  a.kind === b.kind && a.target === b.target && a.at === b.at && a.dueAt === b.dueAt;

/** The moments of `before` that came after `reported` and by `now`, and that `state` no longer runs. */
export function endedMoments(
  before: ConversationSla,
  state: ConversationSla,
  reported: number | null,
  now: number,
): SlaMoment[] {
  const still = nextConversationMoments(state, after(reported));
  return nextConversationMoments(before, after(reported)).filter((m) => m.at <= now && !still.some((k) => same(k, m)));
}

/**
 * The moments to report by `now`, in the order they fell (at_risk first on ties): the owed ones and
 * the state's own, each once, none at or before `reported`.
 */
export function dueMoments(state: ConversationSla, owed: SlaMoment[], reported: number | null, now: number) {
  const out: SlaMoment[] = [];
  for (const m of [...owed, ...nextConversationMoments(state, after(reported))]) {
    if (m.at > after(reported) && m.at <= now && !out.some((k) => same(k, m))) out.push(m);
  }
  return out.sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === 'sla.at_risk' ? -1 : 1));
}

/** When the SLA job is next due: its first owed moment, else the state's next moment after `reported`; null: never. */
export function nextSlaRun(state: ConversationSla, owed: SlaMoment[], reported: number | null): number | null {
  const next = nextConversationMoments(state, after(reported))[0];
  const ats = [...owed.map((m) => m.at), ...(next === undefined ? [] : [next.at])];
  return ats.length === 0 ? null : Math.min(...ats);
}

/** Writes, moves or cancels (`at` null) the conversation's SLA job in `x`, after its row (lock order). */
export async function scheduleConversationSla(x: Executor, id: string, at: number | null): Promise<void> {
  if (at === null) await cancelJob(x, SLA_MOMENT_KIND, id);
  else await insertJob(x, { kind: SLA_MOMENT_KIND, key: id, runAt: new Date(at), payload: { conversationId: id } });
}

/** The owed moments a report_conversations row holds (a JSON array, or null for none). */
export const owedOf = (json: string | null | undefined): SlaMoment[] =>
  json === null || json === undefined ? [] : (JSON.parse(json) as SlaMoment[]);

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
