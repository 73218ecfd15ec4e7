// Owns /tasks (being built).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const tasksRoutes: FastifyPluginAsyncTypebox = async () => {};
