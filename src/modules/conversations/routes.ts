// Owns /conversations (being built).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const conversationsRoutes: FastifyPluginAsyncTypebox = async () => {};
