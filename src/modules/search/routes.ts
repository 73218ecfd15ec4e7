// Owns /messages/search: full-text search over every message, notes included (docs/search.md).
// Every role may search; a staff-role caller finds only messages of conversations assigned to
// them, as the conversations list shows them only those.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PageRequest } from '../../db/paginate.js';
import { ownerFilter } from '../../lib/access.js';
import { ANY_ROLE } from '../../lib/auth.js';
import { fieldError } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { STANDARD_ERRORS } from '../../lib/schemas.js';
import { withAttachments } from '../attachments/service.js';
import type { MessageView } from '../conversations/schemas.js';
import { searchMessages, WINDOW } from './repository.js';
import { SearchMessagesQuery, SearchResponse } from './schemas.js';
import { highlight, searchWords } from './words.js';

export const searchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/search',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['conversations'],
        operationId: 'searchMessages',
        summary: 'Search every message full-text, best match first (a staff-role caller: their own conversations)',
        description:
          'Messages and internal notes holding every word of `q` (the last as a prefix), ranked best match first ' +
          `(ties: the newer first), each with a \`highlight\` snippet. The newest ${WINDOW.toLocaleString('en-US')} matches are ranked and counted ` +
          '(`meta.capped` says when more matched). Narrow by the conversation channel and by ' +
          'creation time (`from` inclusive, `to` exclusive). Ranked, so by page number only (no cursor). ' +
          'API keys need `conversations:read`.',
        querystring: SearchMessagesQuery,
        response: { 200: SearchResponse, ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { q, channel, from, to } = request.query;
      const words = searchWords(q);
      const since = from === undefined ? undefined : new Date(from).toISOString();
      const until = to === undefined ? undefined : new Date(to).toISOString();
      if (since !== undefined && until !== undefined && since >= until)
        throw fieldError('to', 'must be later than from');
      const filter = {
        words,
        channel,
        from: since,
        to: until,
        onlyAssignee: ownerFilter(request.user!),
        recentCutoff: words.length === 0 ? null : await app.recentSearch.current(),
      };
      let capped = false;
      const read = async (req: PageRequest) => {
        if (!('page' in req)) throw new Error('search pages are numbered');
        // Punctuation alone holds no word: nothing matches it (blank text is refused by the schema).
        if (words.length === 0) return { rows: [], total: 0, next: null };
        const found = await searchMessages(app.ctx.store, filter, {
          limit: req.limit,
          offset: (req.page - 1) * req.limit,
        });
        capped = found.capped;
        // A hit is the message as read elsewhere: its files with their signed links.
        const rows = await withAttachments(app.ctx.store, app.attachments.signer, found.rows);
        return { rows, total: found.total, next: null };
      };
      const toHit = (m: MessageView) => ({ ...m, highlight: highlight(m.content, words) });
      const page = await listPage(request, reply, 'message-search', read, toHit, { ranked: true });
      return { ...page, meta: { ...page.meta, capped } };
    },
  );
};
