// Owns the task resource's request and response schemas.
import { type Static, Type } from 'typebox';
import { Nullable, PageQuery, RecordId } from '../../lib/schemas.js';

// Enums rather than unions of literals, so a bad value is reported once as "must be one of: …".
export const TASK_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export const TASK_STATUSES = ['open', 'in_progress', 'completed', 'cancelled'] as const;
export const Priority = Type.Enum([...TASK_PRIORITIES]);
export const Status = Type.Enum([...TASK_STATUSES]);

const DateTime = Type.String({ format: 'date-time', maxLength: 30 });
const Id = Type.String({ maxLength: 64 });

export const Task = Type.Object(
  {
    id: RecordId('tsk'),
    title: Type.String({ maxLength: 200 }),
    description: Nullable(Type.String({ maxLength: 5000 })),
    department: Type.String({ maxLength: 50 }),
    priority: Priority,
    status: Status,
    guestId: Nullable(Id),
    conversationId: Nullable(Id),
    assignee: Nullable(Type.String({ maxLength: 64, description: 'Staff id' })),
    notes: Nullable(Type.String({ maxLength: 5000 })),
    dueAt: Nullable(DateTime),
    completedAt: Nullable(
      Type.String({ format: 'date-time', maxLength: 30, description: 'Set when the task moves to completed' }),
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Task' },
);
export type TaskView = Static<typeof Task>;

const Title = Type.String({ minLength: 1, maxLength: 200 });
const LongText = Type.String({ maxLength: 5000 });
const Department = Type.String({
  minLength: 1,
  maxLength: 50,
  description: 'One of the departments the `departments` setting lists',
});
const refId = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });
const DueAt = Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601 date-time with a time zone' });

export const CreateTaskBody = Type.Object(
  {
    title: Title,
    department: Department,
    priority: Type.Optional(Type.Enum([...TASK_PRIORITIES], { default: 'normal' })),
    description: Type.Optional(Nullable(LongText)),
    guestId: Type.Optional(Nullable(refId('An existing guest id'))),
    conversationId: Type.Optional(
      Nullable(refId('An existing conversation id; of the same guest when guestId is given')),
    ),
    assignee: Type.Optional(Nullable(refId('An active staff id'))),
    dueAt: Type.Optional(Nullable(DueAt)),
  },
  { additionalProperties: false },
);
export type CreateTaskInput = Static<typeof CreateTaskBody>;

export const UpdateTaskBody = Type.Object(
  {
    status: Type.Optional(Status),
    notes: Type.Optional(Nullable(LongText)),
    title: Type.Optional(Title),
    description: Type.Optional(Nullable(LongText)),
    department: Type.Optional(Department),
    priority: Type.Optional(Priority),
    assignee: Type.Optional(Nullable(refId('An active staff id, or null to unassign'))),
    dueAt: Type.Optional(Nullable(DueAt)),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateTaskInput = Static<typeof UpdateTaskBody>;

/** The fields a staff-role caller may change on their own task (CONTRACT §4). */
export const STAFF_UPDATABLE: ReadonlySet<string> = new Set(['status', 'notes']);

export const ListTasksQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(Status),
    priority: Type.Optional(Priority),
    department: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
    assignee: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A staff id, or `unassigned`' })),
  },
  { additionalProperties: false },
);
export type TaskFilter = Omit<Static<typeof ListTasksQuery>, 'page' | 'limit' | 'cursor'>;
