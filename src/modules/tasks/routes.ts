// Owns /tasks: list and get (admin and manager see all, staff their own), create and bulk create
// (admin, manager), update (admin and manager anything; staff status and notes of their own).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerFilter } from '../../lib/access.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { findTask, listTasks, toTask } from './repository.js';
import {
  CreateTaskBody,
  type CreateTaskInput,
  ListTasksQuery,
  Task,
  type TaskView,
  UpdateTaskBody,
} from './schemas.js';
import { createTask, updateTask, visibleTask } from './service.js';

export const tasksRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'tasks:read' },
      schema: {
        tags: ['tasks'],
        operationId: 'listTasks',
        summary: 'List tasks, newest first (a staff-role caller sees only tasks assigned to them)',
        querystring: ListTasksQuery,
        response: { 200: OkList(Task), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { status, priority, department, assignee, overdue } = request.query;
      const filter = {
        status,
        priority,
        department,
        assignee,
        overdue,
        now: new Date().toISOString(),
        owner: ownerFilter(request.user!),
      };
      return listPage(request, reply, 'tasks', (req) => listTasks(db(), filter, req), toTask);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'tasks:read' },
      schema: {
        tags: ['tasks'],
        operationId: 'getTask',
        summary: 'Get a task (a staff-role caller may get only tasks assigned to them)',
        params: IdParams,
        response: { 200: Ok(Task), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      return ok(await visibleTask(db(), request.user!, request.params.id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'tasks:write' },
      schema: {
        tags: ['tasks'],
        operationId: 'createTask',
        summary: 'Create a task (admin, manager); it starts open',
        body: CreateTaskBody,
        response: { 201: Ok(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const task = await createTask(db(), request.user!, request.body);
      reply.code(201);
      return ok(task);
    },
  );

  app.post(
    '/bulk',
    {
      config: { access: ADMIN_MANAGER, scope: 'tasks:write', bucket: 'bulk' },
      schema: {
        tags: ['tasks'],
        operationId: 'bulkCreateTasks',
        summary: 'Create 1–100 tasks (admin, manager); each item is validated and created on its own',
        body: BulkBody(CreateTaskBody),
        response: { 200: BulkResponse(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      return runBulk<CreateTaskInput, TaskView>(
        request.body.items,
        CreateTaskBody,
        (item) => createTask(db(), user, item),
        request.log,
      );
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'tasks:write', current: currentById('tasks', findTask) },
      schema: {
        tags: ['tasks'],
        operationId: 'updateTask',
        summary: 'Update a task (a staff-role caller: only status and notes of a task assigned to them)',
        description:
          'Any status may move to any other. completedAt is set when the task moves to completed and cleared when it leaves completed.',
        params: IdParams,
        body: UpdateTaskBody,
        response: { 200: Ok(Task), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateTask(db(), request.user!, request.params.id, request.body)),
  );
};
