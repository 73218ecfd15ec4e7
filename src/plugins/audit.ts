// Owns writing the audit log (CONTRACT §11): which answers are audited and as what (one table,
// below), with the caller as actor, what was acted on, the IP, user agent and request id. An entry
// is written before its answer is sent, after the change committed; a failure to write it is
// logged and never fails the answer. Entries older than AUDIT_RETENTION_DAYS are purged hourly.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { appendAudit, purgeAudit, type Ref } from '../modules/audit/repository.js';
import type { AuditAction } from '../modules/audit/schemas.js';

const PURGE_EVERY_MS = 3600_000;

interface Seen {
  request: FastifyRequest;
  reply: FastifyReply;
  /** The answer's `data`, parsed (only for the routes that need ids from it). */
  data(): Record<string, unknown> | undefined;
}
type Audited = { action: AuditAction; target: Ref | null; actor?: Ref | null } | null;

const param = (s: Seen, name: string) => (s.request.params as Record<string, string> | undefined)?.[name] ?? null;
const ok = (s: Seen) => s.reply.statusCode >= 200 && s.reply.statusCode < 300;
const ref = (type: string, id: unknown): Ref => ({ type, id: typeof id === 'string' ? id : null });

/** Audited answers by route: what each records, or null when this answer records nothing. */
const AUDITED: Record<string, (s: Seen) => Audited> = {
  'POST /api/v1/auth/login': (s) => {
    if (ok(s)) {
      const user = s.data()?.user as { id?: unknown } | undefined;
      return { action: 'auth.login', target: null, actor: ref('staff', user?.id) };
    }
    if (s.reply.statusCode !== 401) return null;
    const email = (s.request.body as { email?: unknown } | undefined)?.email;
    return {
      action: 'auth.login_failed',
      target: ref('email', typeof email === 'string' ? email.toLowerCase() : null),
    };
  },
  'POST /api/v1/auth/logout': (s) => (ok(s) ? { action: 'auth.logout', target: null } : null),
  'POST /api/v1/auth/password': (s) => (ok(s) ? { action: 'auth.password_changed', target: null } : null),
  'POST /api/v1/staff': (s) => (ok(s) ? { action: 'staff.created', target: ref('staff', s.data()?.id) } : null),
  'PATCH /api/v1/staff/:id': (s) => (ok(s) ? { action: 'staff.updated', target: ref('staff', param(s, 'id')) } : null),
  'PUT /api/v1/settings/:key': (s) =>
    ok(s) ? { action: 'settings.updated', target: ref('setting', param(s, 'key')) } : null,
  'DELETE /api/v1/settings/:key': (s) =>
    ok(s) ? { action: 'settings.updated', target: ref('setting', param(s, 'key')) } : null,
  'POST /api/v1/api-keys': (s) => (ok(s) ? { action: 'api_key.created', target: ref('api_key', s.data()?.id) } : null),
  'PATCH /api/v1/api-keys/:id': (s) =>
    ok(s) ? { action: 'api_key.updated', target: ref('api_key', param(s, 'id')) } : null,
  'POST /api/v1/api-keys/:id/rotate': (s) =>
    ok(s) ? { action: 'api_key.rotated', target: ref('api_key', param(s, 'id')) } : null,
  'DELETE /api/v1/api-keys/:id': (s) =>
    ok(s) ? { action: 'api_key.revoked', target: ref('api_key', param(s, 'id')) } : null,
  'POST /api/v1/webhooks/:id/rotate-secret': (s) =>
    ok(s) ? { action: 'webhook.secret_rotated', target: ref('webhook', param(s, 'id')) } : null,
};

export default fp(
  async function audit(app: FastifyInstance) {
    // A callback hook: most answers are not audited and pass without a promise.
    app.addHook('onSend', (request, reply, payload, done) => {
      const route = `${request.method} ${request.routeOptions.url ?? ''}`;
      let parsed: Record<string, unknown> | undefined | null = null;
      const seen: Seen = {
        request,
        reply,
        data() {
          if (parsed === null) {
            try {
              parsed = (JSON.parse(String(payload)) as { data?: Record<string, unknown> }).data;
            } catch {
              parsed = undefined;
            }
          }
          return parsed;
        },
      };
      const what: Audited =
        reply.statusCode === 403 && request.user != null
          ? { action: 'access.denied', target: ref('route', route) }
          : (AUDITED[route]?.(seen) ?? null);
      if (what === null) return done(null, payload);
      const user = request.user ?? null;
      const actor =
        what.actor !== undefined
          ? what.actor
          : user === null
            ? null
            : ref(user.kind === 'api_key' ? 'api_key' : 'staff', user.id);
      const agent = request.headers['user-agent'];
      app.ctx.store
        .transact((tx) =>
          appendAudit(tx, {
            action: what.action,
            actor,
            target: what.target,
            ip: request.ip ?? null,
            userAgent: typeof agent === 'string' ? agent : null,
            requestId: request.id,
          }),
        )
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
