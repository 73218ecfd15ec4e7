// Owns Idempotency-Key (docs/integrations.md, "Retrying safely") on every authenticated POST and on routes declaring
// `config.idempotent`: the handler of a request carrying a key runs in one request transaction
// (src/db/request-tx.ts), which the services' own transactions join, and its answer is written in
// that transaction before it commits: a crash can never keep the change without the answer. A
// repeat replays the status and body with `Idempotent-Replayed: true`; the same key while the first
// request is in flight is a 409 with Retry-After (in process, and across instances on PostgreSQL by
// an advisory lock held by the request transaction); another request with the same key is a 422
// IDEMPOTENCY_KEY_REUSED. Records are kept 24 hours, then purged. Error answers are not kept: they
// changed nothing, so a retry runs again.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import fp from 'fastify-plugin';
import { CompiledQuery } from 'kysely';
import { inRequestTx } from '../db/request-tx.js';
import { isUniqueViolation } from '../db/store.js';
import { AppError, fieldError } from '../lib/errors.js';
import {
  AnswerSealer,
  fingerprintOf,
  KEY_PATTERN,
  lockIdOf,
  purgeAnswers,
  type RecordId,
  readAnswer,
  type StoredAnswer,
  takesIdempotencyKey,
  writeAnswer,
} from '../lib/idempotency.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Takes an Idempotency-Key (default: POST routes that are not public). */
    idempotent?: boolean;
  }
}

const PURGE_EVERY_MS = 3600_000;
/** Seconds a client waits before retrying a key that is in flight. */
const RETRY_AFTER_S = 1;

const inFlight = () =>
  new AppError(
    'CONFLICT',
    'A request with this Idempotency-Key is still in progress; retry after Retry-After seconds',
    undefined,
    { 'retry-after': String(RETRY_AFTER_S) },
  );

/** Thrown inside the request transaction when the answer turns out to exist already. */
class Replay {
  constructor(readonly answer: StoredAnswer) {}
}

export default fp(
  async function idempotency(app: FastifyInstance) {
    const sealer = new AnswerSealer([app.ctx.config.jwtSecret, ...app.ctx.config.jwtPreviousSecrets]);
    /** Keys in flight in this process: caller, route and key. */
    const running = new Set<string>();

    const replay = (reply: FastifyReply, answer: StoredAnswer, fingerprint: string): unknown => {
      if (answer.fingerprint !== fingerprint) {
        throw new AppError(
          'IDEMPOTENCY_KEY_REUSED',
          'This Idempotency-Key was used with another request (URL or body); use a new key for a new request',
        );
      }
      const body = sealer.open(answer.body);
      if (body === null) throw inFlight();
      reply.code(answer.status).header('idempotent-replayed', 'true');
      return JSON.parse(body);
    };

    // Without the header the route's own handler is called as it is: no promise or microtask of
    // this layer's own on the request path.
    const guarded = (inner: RouteHandlerMethod): RouteHandlerMethod =>
      function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const header = request.headers['idempotency-key'];
        const user = request.user;
        if (header === undefined || user === null) return inner.call(this, request, reply);
        return keyed.call(this, inner, request, reply, header, user);
      };

    async function keyed(
      this: FastifyInstance,
      inner: RouteHandlerMethod,
      request: FastifyRequest,
      reply: FastifyReply,
      header: string | string[],
      user: NonNullable<FastifyRequest['user']>,
    ): Promise<unknown> {
      if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
        throw fieldError('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
      }
      const { store } = app.ctx;
      const id: RecordId = {
        caller: `${user.kind === 'api_key' ? 'key' : 'stf'}:${user.id}`,
        route: `${request.method} ${request.routeOptions.url}`,
        key: header,
      };
      const fingerprint = fingerprintOf(request.url, request.body);
      const kept = await readAnswer(store, id);
      if (kept !== undefined) return replay(reply, kept, fingerprint);
      const local = `${id.caller}\u0000${id.route}\u0000${id.key}`;
      if (running.has(local)) throw inFlight();
      running.add(local);
      try {
        return await store.transact(async (tx) => {
          if (tx.dialect === 'postgres') {
            const lock = await tx.executeQuery<{ ok: boolean }>(
              CompiledQuery.raw('select pg_try_advisory_xact_lock($1::bigint) as ok', [lockIdOf(id)]),
            );
            if (lock.rows[0]?.ok !== true) throw inFlight();
          }
          // Another instance may have answered since the read above.
          const answered = await readAnswer(tx, id);
          if (answered !== undefined) throw new Replay(answered);
          const value = await inRequestTx(tx, async () => inner.call(this, request, reply));
          await writeAnswer(tx, id, {
            fingerprint,
            status: reply.statusCode,
            body: sealer.seal(JSON.stringify(value)),
          });
          return value;
        });
      } catch (err) {
        if (err instanceof Replay) return replay(reply, err.answer, fingerprint);
        // A request with the same key committed first (another process without a shared lock).
        if (isUniqueViolation(err)) {
          const answer = await readAnswer(store, id);
          if (answer !== undefined) return replay(reply, answer, fingerprint);
        }
        throw err;
      } finally {
        running.delete(local);
      }
    }

    app.addHook('onRoute', (route) => {
      if (route.url.startsWith('/api/v1') && takesIdempotencyKey(route.method, route.config)) {
        route.handler = guarded(route.handler as RouteHandlerMethod);
      }
    });

    const purge = setInterval(() => {
      purgeAnswers(app.ctx.store).catch((err: unknown) => app.log.warn({ err }, 'idempotency purge failed'));
    }, PURGE_EVERY_MS);
    purge.unref();
    app.addHook('onClose', async () => clearInterval(purge));
  },
  { name: 'idempotency', dependencies: ['gate'] },
);
