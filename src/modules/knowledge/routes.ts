// Owns /knowledge (being built).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const knowledgeRoutes: FastifyPluginAsyncTypebox = async () => {};
