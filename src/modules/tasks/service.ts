// Owns the rules of tasks: who may read, create or change which task, what a due date may be, and
// that what a task refers to exists. Every write here is one transaction, its events written in it.
import type { Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated, visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { type FieldError, forbidden, validation } from '../../lib/errors.js';
import { staffActor, taskEvents } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { departmentProblem } from '../settings/service.js';
import {
  findConversationGuest,
  findStayGuest,
  findTask,
  guestExists,
  insertTask,
  staffActive,
  updateTask as updateTaskRow,
} from './repository.js';
import { type CreateTaskInput, STAFF_UPDATABLE, type TaskView, type UpdateTaskInput } from './schemas.js';

const WHAT = 'Task';
const MIN_YEAR = 1970;
const MAX_YEAR = 9999;

/**
 * A due date in canonical UTC form, with its problem if it has one. Both stores keep it as given
 * only within four-digit years, and a format-valid leap second is not a real instant.
 */
function dueAtOf(value: string | null | undefined): { dueAt: string | null | undefined; problems: FieldError[] } {
  if (value === null || value === undefined) return { dueAt: value, problems: [] };
  const d = new Date(value);
  const year = d.getUTCFullYear();
  if (Number.isNaN(d.getTime()) || year < MIN_YEAR || year > MAX_YEAR) {
    return {
      dueAt: undefined,
      problems: [{ field: 'dueAt', message: `must be a date-time in ${MIN_YEAR}–${MAX_YEAR}` }],
    };
  }
  return { dueAt: d.toISOString(), problems: [] };
}

interface References {
  department?: string | undefined;
  guestId?: string | null | undefined;
  conversationId?: string | null | undefined;
  assignee?: string | null | undefined;
}

/**
 * Every problem with what a task body refers to, so one 400 names all of them: a department the
 * setting does not list, a guest or conversation that does not exist (or a conversation of
 * another guest), an assignee who is missing or deactivated.
 */
async function referenceProblems(db: Executor, r: References): Promise<FieldError[]> {
  const problems: FieldError[] = [];
  const department = await departmentProblem(db, r.department);
  if (department !== null) problems.push(department);
  if (r.guestId != null && !(await guestExists(db, r.guestId))) {
    problems.push({ field: 'guestId', message: `guest ${r.guestId} does not exist` });
  }
  if (r.conversationId != null) {
    const conversation = await findConversationGuest(db, r.conversationId);
    if (conversation === undefined) {
      problems.push({ field: 'conversationId', message: `conversation ${r.conversationId} does not exist` });
    } else if (r.guestId != null && conversation.guest_id !== r.guestId) {
      problems.push({ field: 'conversationId', message: 'belongs to another guest than guestId' });
    }
  }
  if (r.assignee != null) {
    const active = await staffActive(db, r.assignee);
    if (active === undefined)
      problems.push({ field: 'assignee', message: `staff member ${r.assignee} does not exist` });
    else if (!active) problems.push({ field: 'assignee', message: 'is a deactivated staff member' });
  }
  return problems;
}

const invalid = (problems: FieldError[]) => validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);

/** The task if the caller may see it (404 missing, 403 a staff-role caller's colleague's). */
export async function visibleTask(db: Executor, user: AuthUser, id: string): Promise<TaskView> {
  return visibleTo(user, await findTask(db, id), (t) => t.assignee, WHAT, id);
}

/**
 * The guest a task's stay makes its guest (docs/stays.md): a task about a stay is about that
 * stay's guest, so a different guest named with it is a problem.
 */
async function stayGuest(
  db: Executor,
  stayId: string | null | undefined,
  guestId: string | null | undefined,
  guestField = 'guestId',
): Promise<{ guestId?: string; problem?: FieldError }> {
  if (stayId === null || stayId === undefined) return {};
  const stay = await findStayGuest(db, stayId);
  if (stay === undefined) return { problem: { field: 'stayId', message: `stay ${stayId} does not exist` } };
  if (guestId != null && guestId !== stay.guest_id) {
    const message =
      guestField === 'stayId'
        ? `is a stay of guest ${stay.guest_id}, not of the task's guest ${guestId}`
        : `must be the stay's guest ${stay.guest_id}, or left out`;
    return { problem: { field: guestField, message } };
  }
  return { guestId: stay.guest_id };
}

/** Checks what the input refers to and inserts the task, in one transaction. */
export function createTask(store: Store, user: AuthUser, input: CreateTaskInput): Promise<TaskView> {
  return withEvents(store, async (tx, outbox) => {
    const { dueAt, problems } = dueAtOf(input.dueAt);
    const stay = await stayGuest(tx, input.stayId, input.guestId);
    if (stay.problem !== undefined) problems.push(stay.problem);
    const guestId = stay.guestId ?? input.guestId;
    problems.push(...(await referenceProblems(tx, { ...input, guestId })));
    if (problems.length > 0) throw invalid(problems);
    const task = await insertTask(tx, { ...input, guestId, dueAt });
    taskEvents(outbox, staffActor(user), null, task);
    return task;
  });
}

/** Applies a change; a staff-role caller may change only status and notes of their own tasks. */
export function updateTask(store: Store, user: AuthUser, id: string, changes: UpdateTaskInput): Promise<TaskView> {
  return withEvents(store, async (tx, outbox) => {
    const current = await visibleTask(tx, user, id);
    if (!isElevated(user)) {
      const denied = Object.keys(changes).filter((k) => !STAFF_UPDATABLE.has(k));
      if (denied.length > 0) {
        throw forbidden(`A staff member may change only status and notes; not allowed: ${denied.join(', ')}`);
      }
    }
    const { dueAt, problems } = dueAtOf(changes.dueAt);
    const stay = await stayGuest(tx, changes.stayId, current.guestId, 'stayId');
    if (stay.problem !== undefined) problems.push(stay.problem);
    problems.push(...(await referenceProblems(tx, { department: changes.department, assignee: changes.assignee })));
    if (problems.length > 0) throw invalid(problems);
    // A task without a guest takes its new stay's guest.
    const guest = current.guestId === null && stay.guestId !== undefined ? { guestId: stay.guestId } : {};
    const after = await updateTaskRow(tx, current, { ...changes, ...guest, dueAt });
    taskEvents(outbox, staffActor(user), current, after);
    return after;
  });
}
