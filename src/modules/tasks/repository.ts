// Owns task rows: reads, writes, the lookups of what a task refers to, and the mapping of a row
// to its API shape.
import type { SelectQueryBuilder } from 'kysely';
import { paginate } from '../../db/paginate.js';
import { type Param, prepared, updateById } from '../../db/prepared.js';
import { nowIso, toIso } from '../../db/store.js';
import type { Executor, TaskRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { taskWritten } from '../reports/recorder.js';
import type { CreateTaskInput, TaskFilter, TaskView, UpdateTaskInput } from './schemas.js';

export const COLUMNS = [
  'id',
  'title',
  'description',
  'department',
  'priority',
  'status',
  'guest_id',
  'conversation_id',
  'stay_id',
  'assignee',
  'notes',
  'due_at',
  'completed_at',
  'created_at',
  'updated_at',
  'deadline',
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
    stayId: row.stay_id ?? null,
    assignee: row.assignee,
    notes: row.notes,
    dueAt: row.due_at === null ? null : toIso(row.due_at),
    completedAt: row.completed_at === null ? null : toIso(row.completed_at),
    deadline: row.deadline == null ? null : toIso(row.deadline),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

const taskById = prepared((db, p: Param<{ id: string }>) =>
  db.selectFrom('tasks').select(COLUMNS).where('id', '=', p('id')),
);

export async function findTask(db: Executor, id: string): Promise<TaskView | undefined> {
  const row = await db.first(taskById, { id });
  return row && toTask(row);
}

export interface ListFilter extends TaskFilter {
  /** Restricts the list to tasks assigned to this staff id (a staff-role caller's own). */
  owner?: string;
  /** The moment `overdue` is judged at (ISO). */
  now?: string;
}

/** Past its deadline at `now`, neither completed nor cancelled: read from the deadline index. */
// biome-ignore lint/suspicious/noExplicitAny: applied to the list's builder and to its count's alike.
function whereOverdue<Q extends SelectQueryBuilder<any, any, any>>(q: Q, overdue: boolean, p: (n: string) => never): Q {
  return q.where((eb) => {
    if (overdue) return eb.and([eb('deadline', '<=', p('now')), eb('status', 'not in', ['completed', 'cancelled'])]);
    return eb.or([
      eb('deadline', 'is', null),
      eb('deadline', '>', p('now')),
      eb('status', 'in', ['completed', 'cancelled']),
    ]);
  }) as Q;
}

/** The filters a query shape has: each present or not, the assignee also "unassigned". */
const shapeOf = (f: ListFilter): string =>
  [
    f.status !== undefined,
    f.priority !== undefined,
    f.department !== undefined,
    f.assignee === undefined ? 'any' : f.assignee === 'unassigned' ? 'none' : 'one',
    f.owner !== undefined,
    f.overdue ?? '',
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
    if (f.overdue !== undefined) q = whereOverdue(q, f.overdue, p);
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
    if (f.overdue !== undefined) {
      // Overdue changes with the clock, so no kept count follows it: counted from the deadline index.
      let c = x.selectFrom('tasks').select((eb) => eb.fn.countAll<number>().as('n'));
      if (f.status !== undefined) c = c.where('status', '=', p('status'));
      if (f.priority !== undefined) c = c.where('priority', '=', p('priority'));
      if (f.department !== undefined) c = c.where('department', '=', p('department'));
      if (f.assignee === 'unassigned') c = c.where('assignee', 'is', null);
      else if (f.assignee !== undefined) c = c.where('assignee', '=', p('assignee'));
      if (f.owner !== undefined) c = c.where('assignee', '=', p('owner'));
      return whereOverdue(c, f.overdue, p);
    }
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
    now: f.now,
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

/** The guest a stay belongs to; undefined when the stay does not exist. */
export function findStayGuest(db: Executor, id: string) {
  return db.selectFrom('stays').select(['id', 'guest_id']).where('id', '=', id).executeTakeFirst();
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
    stay_id: input.stayId ?? null,
    assignee: input.assignee ?? null,
    notes: null,
    due_at: input.dueAt ?? null,
    completed_at: null,
    created_at: now,
    updated_at: now,
    deadline: null,
  };
  await db.insertInto('tasks').values(row).execute();
  const task = toTask(row);
  // Reports count it, and fix its deadline, in the same transaction (docs/reports.md).
  task.deadline = await taskWritten(db, null, task);
  return task;
}

/** Applies `c` to `current`; completedAt is stamped on entering completed and cleared on leaving it. */
export async function updateTask(
  db: Executor,
  current: TaskView,
  c: UpdateTaskInput & { guestId?: string | null },
): Promise<TaskView> {
  const now = nowIso();
  let completedAt = current.completedAt;
  if (c.status !== undefined) {
    if (c.status !== 'completed') completedAt = null;
    else if (current.status !== 'completed' || completedAt === null) completedAt = now;
  }
  await updateById(db, 'tasks', current.id, {
    ...(c.status !== undefined && { status: c.status }),
    ...(c.notes !== undefined && { notes: c.notes }),
    ...(c.title !== undefined && { title: c.title }),
    ...(c.description !== undefined && { description: c.description }),
    ...(c.department !== undefined && { department: c.department }),
    ...(c.priority !== undefined && { priority: c.priority }),
    ...(c.assignee !== undefined && { assignee: c.assignee }),
    ...(c.stayId !== undefined && { stay_id: c.stayId }),
    ...(c.guestId !== undefined && { guest_id: c.guestId }),
    ...(c.dueAt !== undefined && { due_at: c.dueAt }),
    completed_at: completedAt,
    updated_at: now,
  });
  const after = (await findTask(db, current.id))!;
  after.deadline = await taskWritten(db, current, after);
  return after;
}
