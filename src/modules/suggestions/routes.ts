// Owns GET /conversations/:id/suggestions: whoever may read the conversation may ask what to
// answer its guest with (a staff-role caller: their own conversations).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ANY_ROLE } from '../../lib/auth.js';
import { IdParams, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { visibleConversationRef } from '../conversations/service.js';
import { Suggestions } from './schemas.js';
import { suggestionsFor } from './service.js';

export const suggestionsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/:id/suggestions',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['conversations'],
        operationId: 'getConversationSuggestions',
        summary: 'Suggest knowledge entries and canned responses that answer the guest’s latest message',
        description:
          'Up to 3 of each, best first, ranked by full-text match (stemmed, case-insensitive) of any word of the ' +
          'guest’s latest inbound message, title and shortcode words weighing more than content words; common ' +
          'words (the, can, please …) are ignored. Entries matching no word are left out; both lists are empty ' +
          'while the guest has not written. Same access as reading the conversation.',
        params: IdParams,
        response: { 200: Ok(Suggestions), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      await visibleConversationRef(db(), request.user!, id);
      return ok(await suggestionsFor(db(), id));
    },
  );
};
