// Owns /guests (being built).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const guestsRoutes: FastifyPluginAsyncTypebox = async () => {};
