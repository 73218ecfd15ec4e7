// Owns /events: the feed (oldest first after a cursor), the live stream (Server-Sent Events) and the
// one-use tickets that open it without an Authorization header (browsers' EventSource). Admin and
// manager see every event; a staff-role caller only those of conversations and tasks assigned to them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ownerFilter } from '../../lib/access.js';
import { ANY_ROLE } from '../../lib/auth.js';
import { AppError, fieldError } from '../../lib/errors.js';
import { Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { listEvents, maxEventId, toEvent } from './repository.js';
import { Cursor, EVENT_TYPES, FeedQuery, FeedResponse, isEventType, TypesQuery } from './schemas.js';
import { serveStream } from './stream.js';
import { TICKET_PATTERN } from './tickets.js';

/** `a,b,c` into known event types; an unknown one is a VALIDATION_ERROR naming it. */
export function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const types = [...new Set(raw.split(',').map((s) => s.trim()))].filter((s) => s !== '');
  const unknown = types.filter((t) => !isEventType(t));
  if (unknown.length > 0) {
    throw fieldError('types', `unknown event type ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
  }
  return types.length > 0 ? types : undefined;
}

const TICKET_EXAMPLE = 'gmt_DiSlDUgBDy4MCmIw1EKtHZJ6QiN8mncbDYEoJRC1ijE';

const StreamQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        ...Cursor,
        description:
          'Start after this event id (Last-Event-ID wins); 0 replays every event kept. Without either, the ' +
          'stream starts at the newest event and sends only what happens after it connects.',
      }),
    ),
    types: Type.Optional(TypesQuery),
    ticket: Type.Optional(
      Type.String({
        pattern: TICKET_PATTERN,
        maxLength: 47,
        'x-pattern-message': 'must be the `ticket` of a POST /events/stream-tickets answer',
        description:
          'A stream ticket from POST /events/stream-tickets, in place of the Authorization header (which a ' +
          "browser's EventSource cannot send): one use, within 60 s of being made. Read only without an " +
          'Authorization header, and on this operation only.',
        examples: [TICKET_EXAMPLE],
      }),
    ),
  },
  { additionalProperties: false },
);
const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ ...Cursor, description: 'Resume after this event id (sent by EventSource when it reconnects)' }),
  ),
});

const StreamTicket = Type.Object({
  ticket: Type.String({
    pattern: TICKET_PATTERN,
    minLength: 47,
    maxLength: 47,
    description: 'Pass as `ticket` to GET /events/stream (no Authorization header needed); opens one stream',
    examples: [TICKET_EXAMPLE],
  }),
  expiresAt: Type.String({
    format: 'date-time',
    maxLength: 30,
    description: 'When the ticket lapses if unused: 60 s from now, or sooner if the token or key that made it expires',
  }),
});
const NO_STORE = {
  'Cache-Control': {
    type: 'string',
    enum: ['no-store'],
    description: 'The ticket is a credential: no cache keeps it',
  },
};

/** When a caller at the stream cap may try again: a slot frees as soon as one of theirs ends. */
const STREAM_RETRY_AFTER_S = 5;

export const eventsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'events:read' },
      schema: {
        tags: ['events'],
        operationId: 'listEvents',
        summary: 'Read events oldest first after a cursor (a staff-role caller: only their conversations and tasks)',
        description:
          'Poll with `after` = the previous `meta.nextCursor`. Events are kept EVENT_RETENTION_DAYS days (30 by default).',
        querystring: FeedQuery,
        response: { 200: FeedResponse, ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { after = '0', types, limit = 50 } = request.query;
      const rows = await listEvents(db(), {
        after: Number(after),
        types: parseTypes(types),
        assignee: ownerFilter(request.user!),
        limit: limit + 1,
      });
      const page = rows.slice(0, limit);
      return {
        success: true as const,
        data: page.map(toEvent),
        meta: {
          nextCursor: page.length > 0 ? String(page[page.length - 1]!.id) : after,
          hasMore: rows.length > limit,
          limit,
        },
      };
    },
  );

  app.get(
    '/stream',
    {
      // A HEAD would open a stream that sends nothing and never ends.
      exposeHeadRoute: false,
      config: { access: ANY_ROLE, scope: 'events:read', ticket: true },
      schema: {
        tags: ['events'],
        operationId: 'streamEvents',
        summary: 'Live events as Server-Sent Events, resumable with Last-Event-ID',
        description:
          'Each event is `id: <event id>` and `data: <event JSON>`; a `: heartbeat` comment comes every ' +
          `${app.ctx.config.eventStreamHeartbeatMs / 1000} s. Same filters as GET /events. Without \`after\` or ` +
          'Last-Event-ID the stream starts at the newest event (no history is replayed); `after=0` replays every ' +
          'event kept. The stream ends when the token expires, 24 h after an API key opened it, within 5 s of its ' +
          'caller losing access (a key revoked or without events:read, a token logged out, a staff member ' +
          'deactivated or given another role), or when the server shuts down; reconnect with Last-Event-ID to ' +
          'continue without gaps (a caller without access is then refused with 401 or 403). At most ' +
          `${app.ctx.config.streamsPerCaller} streams per caller may be open at once (STREAMS_PER_CALLER); the next ` +
          'is refused with 429 RATE_LIMITED. A browser, whose EventSource cannot send an Authorization header, ' +
          'makes a ticket with POST /events/stream-tickets and passes it as `ticket`; the stream is then its ' +
          "maker's, with their filters, cap and access checks. Each ticket opens one stream: to reconnect, make a " +
          'new one and pass the last event id seen as `after`.',
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: {
          200: {
            description: 'text/event-stream, open until the client, the server or lost access ends it',
            content: { 'text/event-stream': { schema: Type.String({ maxLength: 1_048_576 }) } },
          },
          ...STANDARD_ERRORS,
          401: {
            ...STANDARD_ERRORS[401],
            description: `${STANDARD_ERRORS[401].description}; TOKEN_INVALID also for a ticket that is unknown, used or expired`,
          },
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['last-event-id'];
      const from = typeof header === 'string' && header !== '' ? header : request.query.after;
      const types = parseTypes(request.query.types);
      // Without a cursor the stream starts at the newest event: a dashboard that connects (or a
      // browser that reopens in the morning) wants what happens next, not the days kept before.
      const after = from === undefined ? await maxEventId(db()) : Number(from);
      const { slots, access } = app.eventsRuntime;
      // Keyed by the caller's id (a staff member now, an API key's id when keys come).
      const slot = await slots.acquire(request.user!.id);
      if (slot === null) {
        throw new AppError(
          'RATE_LIMITED',
          `At most ${slots.cap} event streams may be open at once per caller (STREAMS_PER_CALLER); close one first`,
          undefined,
          { 'retry-after': String(STREAM_RETRY_AFTER_S) },
        );
      }
      await serveStream(request, reply, {
        db: db(),
        hub: app.eventsRuntime.hub,
        heartbeatMs: app.ctx.config.eventStreamHeartbeatMs,
        after,
        types,
        assignee: ownerFilter(request.user!),
        endsAt: access.endsAt(request.user!),
        watch: (end) => access.watch(request, end),
        onEnd: slot.release,
      });
    },
  );

  app.post(
    '/stream-tickets',
    {
      config: { access: ANY_ROLE, scope: 'events:read', location: false },
      // Every answer, a replay of an Idempotency-Key's too: a ticket is a credential.
      onSend: (_request, reply, payload, done) => {
        reply.header('cache-control', 'no-store');
        done(null, payload);
      },
      schema: {
        tags: ['events'],
        operationId: 'createStreamTicket',
        summary: 'Make a one-use ticket that opens GET /events/stream without an Authorization header (browsers)',
        description:
          "A browser's EventSource cannot send an Authorization header: make a ticket with your token or key, then " +
          'open `GET /events/stream?ticket=<ticket>`. A ticket opens one stream, within 60 s (or before the token ' +
          'or key that made it expires, if sooner); the stream is yours, with your filters and stream cap, and ' +
          'ends as yours would when you lose access. A used, unknown or expired ticket is 401 TOKEN_INVALID. To ' +
          'reconnect, make a new ticket and pass the last event id seen as `after`. Counts in your rate-limit bucket.',
        response: {
          201: {
            ...Ok(StreamTicket),
            description: 'A stream ticket and when it lapses unused (shown this once, never stored as it is)',
            headers: NO_STORE,
          },
          ...STANDARD_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const issued = await app.eventsRuntime.tickets.issue(request.user!);
      reply.code(201);
      return ok(issued);
    },
  );
};
