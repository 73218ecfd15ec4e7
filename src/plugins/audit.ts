// Owns the audit entries that record no change of their own (docs/integrations.md, the audit log): logins, succeeded
// and failed, and requests refused with 403 (access.denied). Each is written in its own transaction
// before the answer is sent; a failure to write one is logged and never fails the answer. Every
// entry of a change (staff, settings, API keys, webhooks, logout, password) is written by its
// service inside the change's own transaction instead (src/modules/audit/trail.ts). Entries older
// than AUDIT_RETENTION_DAYS are purged hourly.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { appendAudit, purgeAudit, type Ref } from '../modules/audit/repository.js';
import type { AuditAction } from '../modules/audit/schemas.js';
import { entryOf, ref } from '../modules/audit/trail.js';

const PURGE_EVERY_MS = 3600_000;

const LOGIN_URL = '/api/v1/auth/login';
const LOGIN = `POST ${LOGIN_URL}`;

type Audited = { action: AuditAction; target: Ref | null; actor?: Ref | null } | null;

/** A login's entry: who logged in, or the e-mail a failed attempt named; null for other answers. */
function loginEntry(request: FastifyRequest, reply: FastifyReply, payload: unknown): Audited {
  if (reply.statusCode >= 200 && reply.statusCode < 300) {
    let user: { id?: unknown } | undefined;
    try {
      user = (JSON.parse(String(payload)) as { data?: { user?: { id?: unknown } } }).data?.user;
    } catch {
      user = undefined;
    }
    return { action: 'auth.login', target: null, actor: ref('staff', user?.id) };
  }
  if (reply.statusCode !== 401) return null;
  const email = (request.body as { email?: unknown } | undefined)?.email;
  return {
    action: 'auth.login_failed',
    target: ref('email', typeof email === 'string' ? email.toLowerCase() : null),
  };
}

export default fp(
  async function audit(app: FastifyInstance) {
    // A callback hook: most answers are not audited and pass without a promise.
    // Nothing is built for an answer that is neither a refusal nor a login's.
    app.addHook('onSend', (request, reply, payload, done) => {
      const denied = reply.statusCode === 403 && request.user != null;
      if (!denied && request.routeOptions.url !== LOGIN_URL) return done(null, payload);
      const route = `${request.method} ${request.routeOptions.url ?? ''}`;
      const what: Audited = denied
        ? { action: 'access.denied', target: ref('route', route) }
        : route === LOGIN
          ? loginEntry(request, reply, payload)
          : null;
      if (what === null) return done(null, payload);
      app.ctx.store
        .transact((tx) => appendAudit(tx, entryOf(request, what.action, what.target, what.actor)))
        .catch((err: unknown) => request.log.error({ err, action: what.action }, 'could not write an audit entry'))
        .then(() => done(null, payload));
    });

    const purge = setInterval(() => {
      purgeAudit(app.ctx.store, app.ctx.config.auditRetentionDays).catch((err: unknown) =>
        app.log.warn({ err }, 'audit purge failed'),
      );
    }, PURGE_EVERY_MS);
    purge.unref();
    app.addHook('onClose', async () => clearInterval(purge));
  },
  { name: 'audit', dependencies: ['gate'] },
);
