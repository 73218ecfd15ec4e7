// Owns task rows: reads, writes, the lookups of what a task refers to, and the mapping of a row
// to its API shape.
import { paginate } from '../../db/paginate.js';
import { nowIso, toIso } from '../../db/store.js';
import type { Executor, TaskRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { taskWritten } from '../reports/recorder.js';
import type { CreateTaskInput, TaskFilter, TaskView, UpdateTaskInput } from './schemas.js';

const COLUMNS = [
  'id',
  'title',
  'description',
  'department',
  'priority',
  'status',
  'guest_id',
  'conversation_id',
  'assignee',
  'notes',
  'due_at',
  'completed_at',
  'created_at',
  'updated_at',
] as const;

export function toTask(row: TaskRow): TaskView {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    department: row.department,
    priority: row.priority,
    status: row.status,
    guestId: row.guest_id,
    conversationId: row.conversation_id,
    assignee: row.assignee,
    notes: row.notes,
    dueAt: row.due_at === null ? null : toIso(row.due_at),
    completedAt: row.completed_at === null ? null : toIso(row.completed_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function findTask(db: Executor, id: string): Promise<TaskView | undefined> {
  const row = await db.selectFrom('tasks').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toTask(row);
}

export interface ListFilter extends TaskFilter {
  /** Restricts the list to tasks assigned to this staff id (a staff-role caller's own). */
  owner?: string;
}

/** The filters a query shape has: each present or not, the assignee also "unassigned". */
const shapeOf = (f: ListFilter): string =>
  [
    f.status !== undefined,
    f.priority !== undefined,
    f.department !== undefined,
    f.assignee === undefined ? 'any' : f.assignee === 'unassigned' ? 'none' : 'one',
    f.owner !== undefined,
  ].join();

/** Tasks, newest first; each filter leads one of the tasks_*_idx indexes, which end in (created_at, id). */
export const listTasks = paginate<ListFilter, TaskRow>({
  name: 'tasks',
  from: (db) => db.selectFrom('tasks'),
  where(q, f, p) {
    if (f.status !== undefined) q = q.where('status', '=', p('status'));
    if (f.priority !== undefined) q = q.where('priority', '=', p('priority'));
    if (f.department !== undefined) q = q.where('department', '=', p('department'));
    if (f.assignee === 'unassigned') q = q.where('assignee', 'is', null);
    else if (f.assignee !== undefined) q = q.where('assignee', '=', p('assignee'));
    if (f.owner !== undefined) q = q.where('assignee', '=', p('owner'));
    return q;
  },
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  /**
   * Summed from task_counts (kept exact by triggers, migration 002) instead of counted over the
   * tasks: the same filters, mapped onto the count keys.
   */
  count(x, f, p) {
    let q = x.selectFrom('task_counts').select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));
    if (f.status !== undefined) q = q.where('status', '=', p('status'));
    if (f.priority !== undefined) q = q.where('priority', '=', p('priority'));
    if (f.department !== undefined) q = q.where('department', '=', p('department'));
    if (f.assignee === 'unassigned') q = q.where('assignee_key', '=', '');
    else if (f.assignee !== undefined) q = q.where('assignee_key', '=', p('assignee'));
    if (f.owner !== undefined) q = q.where('assignee_key', '=', p('owner'));
    return q;
  },
  shapeOf,
  values: (f) => ({
    status: f.status,
    priority: f.priority,
    department: f.department,
    assignee: f.assignee,
    owner: f.owner,
  }),
});

/** Whether a guest with this id exists. */
export async function guestExists(db: Executor, id: string): Promise<boolean> {
  return (await db.selectFrom('guests').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/** The guest a conversation belongs to; undefined when the conversation does not exist. */
export function findConversationGuest(db: Executor, id: string) {
  return db.selectFrom('conversations').select(['id', 'guest_id']).where('id', '=', id).executeTakeFirst();
}

/** Whether a staff member is active; undefined when they do not exist. */
export async function staffActive(db: Executor, id: string): Promise<boolean | undefined> {
  const row = await db.selectFrom('staff').select('active').where('id', '=', id).executeTakeFirst();
  return row === undefined ? undefined : Boolean(row.active);
}

export async function insertTask(db: Executor, input: CreateTaskInput): Promise<TaskView> {
  const now = nowIso();
  const row: TaskRow = {
    id: newId('tsk'),
    title: input.title,
    description: input.description ?? null,
    department: input.department,
    priority: input.priority ?? 'normal',
    status: 'open',
    guest_id: input.guestId ?? null,
    conversation_id: input.conversationId ?? null,
    assignee: input.assignee ?? null,
    notes: null,
    due_at: input.dueAt ?? null,
    completed_at: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('tasks').values(row).execute();
  const task = toTask(row);
  // Reports count it, and schedule its deadline, in the same transaction (docs/reports.md).
  await taskWritten(db, null, task);
  return task;
}

/** Applies `c` to `current`; completedAt is stamped on entering completed and cleared on leaving it. */
export async function updateTask(db: Executor, current: TaskView, c: UpdateTaskInput): Promise<TaskView> {
  const now = nowIso();
  let completedAt = current.completedAt;
  if (c.status !== undefined) {
    if (c.status !== 'completed') completedAt = null;
    else if (current.status !== 'completed' || completedAt === null) completedAt = now;
  }
  await db
    .updateTable('tasks')
    .set({
      ...(c.status !== undefined && { status: c.status }),
      ...(c.notes !== undefined && { notes: c.notes }),
      ...(c.title !== undefined && { title: c.title }),
      ...(c.description !== undefined && { description: c.description }),
      ...(c.department !== undefined && { department: c.department }),
      ...(c.priority !== undefined && { priority: c.priority }),
      ...(c.assignee !== undefined && { assignee: c.assignee }),
      ...(c.dueAt !== undefined && { due_at: c.dueAt }),
      completed_at: completedAt,
      updated_at: now,
    })
    .where('id', '=', current.id)
    .execute();
  const after = (await findTask(db, current.id))!;
  await taskWritten(db, current, after);
  return after;
}
