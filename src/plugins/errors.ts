// Owns how every failure is rendered: one error handler turns AppErrors, validation failures,
// body-parser errors and unexpected faults into the envelope; one not-found handler gives 404/405.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { POOL_FULL } from '../db/store.js';
import { AppError, type ErrorCode } from '../lib/errors.js';
import { type AjvLikeError, validationDetails } from '../lib/validation.js';

const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Send the body as application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'VALIDATION_ERROR', message: 'Content-Length does not match the body' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is larger than 1 MiB' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The body is empty; send a JSON object' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'VALIDATION_ERROR', message: 'The body is not valid JSON' },
  FST_ERR_BAD_URL: { code: 'VALIDATION_ERROR', message: 'The URL is malformed' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'VALIDATION_ERROR', message: 'A path parameter is too long' },
};

const MIB = 1024 * 1024;

function send(reply: FastifyReply, status: number, code: string, message: string, details?: unknown) {
  const error: Record<string, unknown> = { code, message };
  if (details !== undefined) error.details = details;
  return reply.code(status).type('application/json; charset=utf-8').send({ success: false, error });
}

export function renderError(err: FastifyError | AppError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AppError) {
    if (err.headers) reply.headers(err.headers);
    return send(reply, err.statusCode, err.code, err.message, err.details);
  }
  const fe = err as FastifyError & { validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const details = validationDetails(fe.validationContext, fe.validation as AjvLikeError[]);
    const first = details[0]!;
    return send(reply, 400, 'VALIDATION_ERROR', `${first.field}: ${first.message}`, details);
  }
  // A method that always carries a body (QUERY) sent without a Content-Type: the client needs to
  // know what to send (or, where no route takes the method, that it is not allowed).
  if (fe.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE') {
    return send(reply, 415, 'UNSUPPORTED_MEDIA_TYPE', `${request.method} needs a Content-Type header`);
  }
  const known = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (known) {
    // A route may take more than the usual 1 MiB (an inbound e-mail): the message names its own cap.
    const limit = request.routeOptions.bodyLimit;
    const message =
      known.code === 'PAYLOAD_TOO_LARGE' && limit !== undefined && limit !== MIB
        ? `The request body is larger than ${Number((limit / MIB).toFixed(2))} MiB`
        : known.message;
    return send(
      reply,
      known.code === 'PAYLOAD_TOO_LARGE' ? 413 : known.code === 'UNSUPPORTED_MEDIA_TYPE' ? 415 : 400,
      known.code,
      message,
    );
  }
  if (err instanceof SyntaxError) {
    return send(reply, 400, 'VALIDATION_ERROR', 'The body is not valid JSON', [
      { field: 'body', message: 'is not valid JSON' },
    ]);
  }
  if (isStoreUnavailable(err)) {
    request.log.error({ err }, 'store unavailable');
    reply.header('retry-after', '1');
    return send(reply, 503, 'SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; retry shortly');
  }
  // Any other 4xx a library raises (a body stream failing with a status of its own) is the client's
  // request failing: 400 VALIDATION_ERROR, the pair every operation documents, whatever its status.
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return send(reply, 400, 'VALIDATION_ERROR', 'The request could not be processed');
  }
  request.log.error({ err }, 'unhandled error');
  return send(reply, 500, 'INTERNAL_ERROR', 'An internal error occurred', { requestId: request.id });
}

const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '57P01',
  '57P03',
  '08006',
  '08001',
  '08003',
  // query_canceled: statement_timeout fired (the store is overloaded or a lock is held too long).
  '57014',
  // SQLITE_BUSY: another process held the write lock for longer than busy_timeout.
  'SQLITE_BUSY',
  // Every PostgreSQL connection is busy and PG_POOL_MAX_WAITING requests already wait.
  POOL_FULL,
]);

function isStoreUnavailable(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE.has(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Connection refused|Query read timeout|Client has encountered a connection error/i.test(
    err.message,
  );
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (headers over Node's
 * `maxHeaderSize`, a request-line that is not HTTP, a header timeout) in the envelope, like every
 * other error: 431 HEADERS_TOO_LARGE, 408, or 400 VALIDATION_ERROR. No route or hook ran, so no
 * rate-limit headers; the request id is new (the client's header may be the oversized one).
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'The request headers are larger than 16 KiB']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'The request was not received in time']
        : [400, 'Bad Request', 'VALIDATION_ERROR', 'The request is not valid HTTP'];
  this.log.debug({ err: err.message, code: err.code }, 'client error');
  // A response already begun on this socket cannot be followed by another one: just close it.
  const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && current?.headersSent !== true) {
    const body = JSON.stringify({ success: false, error: { code, message } });
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

export default fp(
  async function errors(app: FastifyInstance) {
    // Route patterns by method, so an unknown method on a known path is a 405, not a 404.
    const patterns: { re: RegExp; method: string }[] = [];
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const re = new RegExp(
        `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`,
      );
      for (const m of methods) patterns.push({ re, method: m });
    });

    app.setErrorHandler((err, request, reply) =>
      // An unrouted method that Fastify reads a body for fails in the body parser before the
      // not-found handler runs: answer it as an unrouted method (405 or 404).
      (err as FastifyError).code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE' && request.is404
        ? notRouted(request, reply)
        : renderError(err as Error, request, reply),
    );

    // While the server drains (SIGTERM), a request arriving on a kept-alive connection is answered
    // 503 in the envelope with Retry-After, so the client retries elsewhere; requests already in
    // flight finish normally. Every response sent while draining says Connection: close, or a
    // connection that was busy when the drain began would stay open, idle, until its keep-alive
    // timeout (72 s), and hold the process past its 10 s shutdown budget. (Fastify's own
    // return503OnClosing answers with a body outside the envelope, so it is off in app.ts.)
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', (_request, reply, done) => {
      if (!closing) return done();
      reply.header('connection', 'close');
      done(
        new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry shortly', undefined, {
          'retry-after': '1',
        }),
      );
    });
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (closing) reply.header('connection', 'close');
      done(null, payload);
    });

    const notRouted = (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? '';
      const allowed = [...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method))];
      if (allowed.length > 0) {
        reply.header('allow', allowed.join(', '));
        return send(reply, 405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`);
      }
      return send(reply, 404, 'NOT_FOUND', `No route ${request.method} ${path}`);
    };
    app.setNotFoundHandler(notRouted);
  },
  { name: 'errors' },
);
