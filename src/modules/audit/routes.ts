// Owns /audit-log (admin with a staff token): the append-only log of logins, logouts, password,
// staff, settings and API key changes, webhook secret rotations and refusals, newest first.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN } from '../../lib/auth.js';
import { listPage } from '../../lib/pages.js';
import { OkList, STANDARD_ERRORS } from '../../lib/schemas.js';
import { listAudit, toAuditEntry } from './repository.js';
import { AuditEntry, ListAuditQuery } from './schemas.js';

/** A time as stored (ISO with milliseconds, UTC), so text comparison on SQLite orders correctly. */
const stored = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['audit'],
        operationId: 'listAuditLog',
        summary: 'List audit entries, newest first; filter by actor id, action and time (admin)',
        description: 'Entries are kept AUDIT_RETENTION_DAYS days (365 by default) and can never be edited.',
        querystring: ListAuditQuery,
        response: { 200: OkList(AuditEntry), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { actor, action, from, to } = request.query;
      const filter = { actor, action, from: stored(from), to: stored(to) };
      return listPage(request, reply, 'audit-log', (req) => listAudit(app.ctx.store, filter, req), toAuditEntry);
    },
  );
};
