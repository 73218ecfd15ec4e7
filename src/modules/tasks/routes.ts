// Owns /tasks: list and get (admin and manager see all, staff their own), create and bulk create
// (admin, manager), update (admin and manager anything; staff status and notes of their own).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isElevated, ownerFilter, visibleTo } from '../../lib/access.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { type FieldError, forbidden, validation } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { staffActor, taskEvents } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import type { Actor } from '../events/schemas.js';
import { findTask, insertTask, listTasks, referenceProblems, toTask, updateTask } from './repository.js';
import {
  CreateTaskBody,
  type CreateTaskInput,
  ListTasksQuery,
  STAFF_UPDATABLE,
  Task,
  type TaskView,
  UpdateTaskBody,
} from './schemas.js';

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

const invalid = (problems: FieldError[]) => validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);

export const tasksRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  /** Checks what the body refers to and inserts the task, in one transaction. */
  function createTask(input: CreateTaskInput, actor: Actor): Promise<TaskView> {
    return withEvents(db(), async (tx, outbox) => {
      const { dueAt, problems } = dueAtOf(input.dueAt);
      problems.push(...(await referenceProblems(tx, input)));
      if (problems.length > 0) throw invalid(problems);
      const task = await insertTask(tx, { ...input, dueAt });
      taskEvents(outbox, actor, null, task);
      return task;
    });
  }

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, cache: true },
      schema: {
        tags: ['tasks'],
        summary: 'List tasks, newest first (a staff-role caller sees only tasks assigned to them)',
        querystring: ListTasksQuery,
        response: { 200: OkList(Task), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { status, priority, department, assignee } = request.query;
      const filter = { status, priority, department, assignee, owner: ownerFilter(request.user!) };
      return listPage(request, reply, 'tasks', (req) => listTasks(db(), filter, req), toTask);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['tasks'],
        summary: 'Get a task (a staff-role caller may get only tasks assigned to them)',
        params: IdParams,
        response: { 200: Ok(Task), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      return ok(visibleTo(request.user!, await findTask(db(), id), (t) => t.assignee, 'Task', id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['tasks'],
        summary: 'Create a task (admin, manager); it starts open',
        body: CreateTaskBody,
        response: { 201: Ok(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const task = await createTask(request.body, staffActor(request.user!));
      reply.code(201);
      return ok(task);
    },
  );

  app.post(
    '/bulk',
    {
      config: { access: ADMIN_MANAGER, bucket: 'bulk' },
      schema: {
        tags: ['tasks'],
        summary: 'Create 1–100 tasks (admin, manager); each item is validated and created on its own',
        body: BulkBody,
        response: { 200: BulkResponse(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const actor = staffActor(request.user!);
      return runBulk<CreateTaskInput, TaskView>(
        request.body.items,
        CreateTaskBody,
        (item) => createTask(item, actor),
        request.log,
      );
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['tasks'],
        summary: 'Update a task (a staff-role caller: only status and notes of a task assigned to them)',
        description:
          'Any status may move to any other. completedAt is set when the task moves to completed and cleared when it leaves completed.',
        params: IdParams,
        body: UpdateTaskBody,
        response: { 200: Ok(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const user = request.user!;
      const body = request.body;
      const updated = await withEvents(db(), async (tx, outbox) => {
        const current = visibleTo(user, await findTask(tx, id), (t) => t.assignee, 'Task', id);
        if (!isElevated(user)) {
          const denied = Object.keys(body).filter((k) => !STAFF_UPDATABLE.has(k));
          if (denied.length > 0) {
            throw forbidden(`A staff member may change only status and notes; not allowed: ${denied.join(', ')}`);
          }
        }
        const { dueAt, problems } = dueAtOf(body.dueAt);
        problems.push(...(await referenceProblems(tx, { department: body.department, assignee: body.assignee })));
        if (problems.length > 0) throw invalid(problems);
        const after = await updateTask(tx, current, { ...body, dueAt });
        taskEvents(outbox, staffActor(user), current, after);
        return after;
      });
      return ok(updated);
    },
  );
};
