// Owns the task resource's request and response schemas.
import { type Static, Type } from 'typebox';
import { Nullable, PageQuery, RecordId, RefId, RefIdInput } from '../../lib/schemas.js';
import { DepartmentFilter, DepartmentInput } from '../settings/registry.js';

// Enums rather than unions of literals, so a bad value is reported once as "must be one of: …".
export const TASK_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export const TASK_STATUSES = ['open', 'in_progress', 'completed', 'cancelled'] as const;
export const Priority = Type.Enum([...TASK_PRIORITIES]);
export const Status = Type.Enum([...TASK_STATUSES]);

const DateTime = Type.String({ format: 'date-time', maxLength: 30 });

export const Task = Type.Object(
  {
    id: RecordId('tsk'),
    title: Type.String({ maxLength: 200 }),
    description: Nullable(Type.String({ maxLength: 5000 })),
    department: Type.String({ maxLength: 50 }),
    priority: Priority,
    status: Status,
    guestId: Nullable(RefId('gst')),
    conversationId: Nullable(RefId('cnv')),
    stayId: Nullable(RefId('sty', 'The stay the task is about')),
    assignee: Nullable(RefId('stf', 'Staff id')),
    notes: Nullable(Type.String({ maxLength: 5000 })),
    dueAt: Nullable(DateTime),
    completedAt: Nullable(
      Type.String({ format: 'date-time', maxLength: 30, description: 'Set when the task moves to completed' }),
    ),
    deadline: Nullable(
      Type.String({
        format: 'date-time',
        maxLength: 30,
        description:
          "dueAt, or without one the creation plus the `sla` setting's taskMinutes for its priority (in business " +
          'hours unless sla.businessHours is false); null when neither applies. Overdue once it passes before completion.',
      }),
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Task' },
);
export type TaskView = Static<typeof Task>;

const Title = Type.String({ minLength: 1, maxLength: 200 });
const LongText = Type.String({ maxLength: 5000 });
const Department = DepartmentInput;
const StayIdInput = RefIdInput(
  'sty',
  "An existing stay id: its guest becomes the task's guest (a different guestId is a VALIDATION_ERROR)",
);
const DueAt = Type.String({ format: 'date-time', maxLength: 64, description: 'ISO 8601 date-time with a time zone' });

export const CreateTaskBody = Type.Object(
  {
    title: Title,
    department: Department,
    priority: Type.Optional(Type.Enum([...TASK_PRIORITIES], { default: 'normal' })),
    description: Type.Optional(Nullable(LongText)),
    guestId: Type.Optional(Nullable(RefIdInput('gst', 'An existing guest id'))),
    conversationId: Type.Optional(
      Nullable(RefIdInput('cnv', 'An existing conversation id; of the same guest when guestId is given')),
    ),
    assignee: Type.Optional(Nullable(RefIdInput('stf', 'An active staff id'))),
    dueAt: Type.Optional(Nullable(DueAt)),
    stayId: Type.Optional(Nullable(StayIdInput)),
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
    assignee: Type.Optional(Nullable(RefIdInput('stf', 'An active staff id, or null to unassign'))),
    dueAt: Type.Optional(Nullable(DueAt)),
    stayId: Type.Optional(Nullable(StayIdInput)),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateTaskInput = Static<typeof UpdateTaskBody>;

/** The fields a staff-role caller may change on their own task; the others are a manager's or an admin's. */
export const STAFF_UPDATABLE: ReadonlySet<string> = new Set(['status', 'notes']);

export const ListTasksQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(Status),
    priority: Type.Optional(Priority),
    department: Type.Optional(DepartmentFilter),
    assignee: Type.Optional(RefIdInput('stf', 'A staff id, or `unassigned`', 'unassigned')),
    overdue: Type.Optional(
      Type.Boolean({ description: 'true: only tasks past their deadline that are neither completed nor cancelled' }),
    ),
  },
  { additionalProperties: false },
);
export type TaskFilter = Omit<Static<typeof ListTasksQuery>, 'page' | 'limit' | 'cursor'>;
