// Owns snoozing: a conversation set `pending` until a moment is woken (`open`) by a job at that
// moment, once, by whichever instance claims it (docs/jobs.md); the job is written, moved or
// cancelled in the transaction of the change that snoozes, re-snoozes or un-snoozes it. A guest
// writing wakes it at once (src/modules/conversations/repository.ts, `touched`).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { nowIso, type Store } from '../../db/store.js';
import type { Tx } from '../../db/types.js';
import { type FieldError, validation } from '../../lib/errors.js';
import { conversationEvents, SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { cancelJob, insertJob } from '../jobs/repository.js';
import type { JobHandler, JobRunner } from '../jobs/runner.js';
import { findConversation } from './repository.js';
import type { ConversationChanges, ConversationView } from './schemas.js';

/** The job kind that wakes a snoozed conversation; its key is the conversation's id. */
export const WAKE_KIND = 'conversation.wake';
/** The furthest ahead a conversation may be snoozed. */
export const MAX_SNOOZE_DAYS = 90;

/** What a job writer needs: this instance's runner (woken at commit), or none (found by the poll). */
export type Jobs = Pick<JobRunner, 'enqueue'> | null;

/** VALIDATION_ERROR unless `snoozedUntil` (when given) is a moment up to 90 days ahead, with status pending. */
export function checkSnooze(changes: ConversationChanges, now = Date.now()): void {
  const until = changes.snoozedUntil;
  if (until === undefined || until === null) return;
  const problems: FieldError[] = [];
  const at = Date.parse(until);
  if (changes.status !== 'pending') {
    problems.push({ field: 'snoozedUntil', message: 'needs status "pending" in the same request' });
  }
  if (!(at > now)) problems.push({ field: 'snoozedUntil', message: 'must be a moment in the future' });
  else if (at > now + MAX_SNOOZE_DAYS * 86_400_000) {
    problems.push({ field: 'snoozedUntil', message: `must be at most ${MAX_SNOOZE_DAYS} days ahead` });
  }
  if (problems.length > 0) throw validation(problems);
}

/**
 * The snooze a change leaves (undefined: as it was): the moment asked for, null when un-snoozed
 * or when the status changes any other way.
 */
export function snoozeAfter(changes: ConversationChanges, before: ConversationView): string | null | undefined {
  if (changes.snoozedUntil !== undefined && changes.snoozedUntil !== null) {
    return new Date(changes.snoozedUntil).toISOString();
  }
  if (changes.snoozedUntil === null) return null;
  if (changes.status !== undefined && changes.status !== before.status) return null;
  return undefined;
}

/** Writes, moves or cancels the wake-up job in `tx`, after the conversation's row (lock order). */
export async function scheduleWake(tx: Tx, jobs: Jobs, id: string, before: string | null, after: string | null) {
  if (after !== null && after !== before) {
    const job = { kind: WAKE_KIND, key: id, runAt: after, payload: { conversationId: id } };
    if (jobs !== null) await jobs.enqueue(tx, job);
    else await insertJob(tx, job);
  } else if (after === null && before !== null) await cancelJob(tx, WAKE_KIND, id);
}

export function wakeHandler(store: Store): JobHandler {
  return {
    kind: WAKE_KIND,
    retryBaseMs: 1000,
    async run(job, ctx) {
      const { conversationId } = job.payload as { conversationId: string };
      await withEvents(store, async (tx, outbox) => {
        const before = await findConversation(tx, conversationId);
        // The conversation's row first, then the job's: the order a PATCH takes them in.
        const r = await tx
          .updateTable('conversations')
          .set({ status: 'open', snoozed_until: null, updated_at: nowIso() })
          .where('id', '=', conversationId)
          .where('status', '=', 'pending')
          .where('snoozed_until', 'is not', null)
          .executeTakeFirst();
        // Recorded in the same transaction: woken once, whichever instance ran it and however often.
        await ctx.complete(tx);
        if (before === undefined || Number(r.numUpdatedRows) === 0) return;
        const after = (await findConversation(tx, conversationId))!;
        conversationEvents(outbox, SYSTEM, before, after);
      });
    },
  };
}

/** Registers the wake-up job's handler with this instance's runner. */
export default fp(
  async function snooze(app: FastifyInstance) {
    app.jobs.register(wakeHandler(app.ctx.store));
  },
  { name: 'snooze', dependencies: ['jobs-runtime'] },
);
