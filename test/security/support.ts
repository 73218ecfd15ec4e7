// Shared by the security tests: a populated store (an admin, a manager, two staff members each
// with their own guest, conversation, message and task) and the route inventory read from the
// OpenAPI document the app generates, with each route's roles (`x-roles`, from its config.access).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, type Res, type TestUser } from '../helpers.js';

export const CODES = new Set([
  'VALIDATION_ERROR',
  'UNAUTHORIZED',
  'INVALID_CREDENTIALS',
  'TOKEN_EXPIRED',
  'TOKEN_INVALID',
  'TOKEN_MISSING',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'PRECONDITION_FAILED',
  'IDEMPOTENCY_KEY_REUSED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
]);

/** Nothing a client sees should reveal the stack, the SQL or the code layout behind it. */
export const INTERNALS =
  /\bat [\w.<>]+ \(|node_modules|\.ts:\d+|\bselect\b.+\bfrom\b|\binsert into\b|\bupdate \w+ set\b|sqlite|postgres|syntax error|constraint|relation "|FST_ERR|stack/i;

/**
 * Asserts a body reveals no internals. A message may quote what the client sent (a 404 names the
 * id it was given), so the client's own inputs are taken out before looking.
 */
export function assertNoInternals(body: string, what: string, ...inputs: string[]) {
  let own = body;
  for (const input of inputs) own = own.split(JSON.stringify(input).slice(1, -1)).join('');
  assert.doesNotMatch(own, INTERNALS, what);
}

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI form: /api/v1/guests/{id} */
  path: string;
  roles: readonly string[] | 'public';
  // biome-ignore lint/suspicious/noExplicitAny: parts of an OpenAPI operation object.
  op: any;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is read as plain JSON.
export async function openapi(app: FastifyInstance): Promise<any> {
  const res = await call(app, 'GET', '/api/v1/openapi.json');
  assert.equal(res.status, 200);
  return res.body;
}

/**
 * Provider callbacks (docs/channels.md): called by Twilio, Meta or a mail relay, which prove who they
 * are by a signature over the exact request (or a shared secret), not by a staff token; and the
 * signed attachment link (docs/attachments.md), whose query is its proof. Sweeps built for
 * token-authenticated JSON routes leave them out; test/channels and test/attachments cover them, and
 * api5-function-level checks that they are exactly these and refuse an unsigned call.
 */
export const PROVIDER_CALLBACKS = [
  'GET /api/v1/attachments/{id}/content',
  'GET /api/v1/channels/whatsapp/webhook',
  'POST /api/v1/channels/email/inbound',
  'POST /api/v1/channels/email/inbound/mime',
  'POST /api/v1/channels/twilio/inbound',
  'POST /api/v1/channels/twilio/status',
  'POST /api/v1/channels/whatsapp/webhook',
];

/**
 * Every documented request/response operation (event streams left out, and provider callbacks
 * unless asked for), with the roles its route declares (public when it has none).
 */
export async function operations(app: FastifyInstance, o: { providers?: boolean } = {}): Promise<Operation[]> {
  const doc = await openapi(app);
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const m of METHODS) {
      // biome-ignore lint/suspicious/noExplicitAny: see above.
      const op = item[m] as any;
      if (op === undefined) continue;
      // A live event stream never ends, so a request/response sweep cannot call it.
      const streams = path.endsWith('/stream') || JSON.stringify(op.responses ?? {}).includes('text/event-stream');
      if (streams) continue;
      const method = m.toUpperCase() as Operation['method'];
      if (!o.providers && PROVIDER_CALLBACKS.includes(`${method} ${path}`)) continue;
      out.push({ method, path, roles: op['x-roles'] ?? 'public', op });
    }
  }
  return out;
}

/**
 * The query string (no `?`) setting every required query parameter of an operation to its
 * documented example (a search's `q`), so a sweep's call is a valid one; '' when none is required.
 */
export function requiredQuery(op: {
  parameters?: { in: string; name: string; required?: boolean; example?: unknown }[];
}) {
  return (op.parameters ?? [])
    .filter((p) => p.in === 'query' && p.required === true)
    .map((p) => `${p.name}=${encodeURIComponent(String(p.example))}`)
    .join('&');
}

/** The URL of an operation with every path parameter set (`{id}` → id, `{key}` → key). */
export const fill = (path: string, values: Record<string, string>) =>
  path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(values[name] ?? 'none'));

export interface World {
  app: FastifyInstance;
  admin: TestUser;
  manager: TestUser;
  alice: TestUser;
  bob: TestUser;
  /** Per staff member: the guest, conversation, message and task assigned to them, and the guest's stay. */
  own: Record<'alice' | 'bob', { guest: string; conversation: string; message: string; task: string; stay: string }>;
}

async function created(res: Res, what: string) {
  assert.ok(res.status === 201 || res.status === 200, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.data;
}

/** An app with two staff members (alice, bob) who each own one guest, conversation and task. */
export async function world(t: TestContext, env: Record<string, string> = {}): Promise<World> {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '100000', RATE_LIMIT_BULK: '100000', ...env });
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const alice = await createStaff(app, 'staff', { name: 'Alice Staff' });
  const bob = await createStaff(app, 'staff', { name: 'Bob Staff' });
  const own = {} as World['own'];
  for (const [name, user] of [
    ['alice', alice],
    ['bob', bob],
  ] as const) {
    const guest = await created(
      await call(app, 'POST', '/guests', {
        token: admin.token,
        body: { name: `Guest of ${name}`, email: `${name}.guest@example.test`, tags: ['vip'] },
      }),
      'guest',
    );
    const conversation = await created(
      await call(app, 'POST', '/conversations', {
        token: admin.token,
        body: { guestId: guest.id, channel: 'web', assignee: user.id, subject: `for ${name}`, content: 'Hello' },
      }),
      'conversation',
    );
    const message = await created(
      await call(app, 'POST', `/conversations/${conversation.id}/messages`, {
        token: user.token,
        body: { content: `note by ${name}`, type: 'note' },
      }),
      'message',
    );
    const task = await created(
      await call(app, 'POST', '/tasks', {
        token: admin.token,
        body: { title: `Task of ${name}`, department: 'housekeeping', assignee: user.id, guestId: guest.id },
      }),
      'task',
    );
    const stay = await created(
      await call(app, 'POST', '/stays', {
        token: admin.token,
        body: { guestId: guest.id, checkIn: '2030-01-01', checkOut: '2030-01-03', room: `${name}-room` },
      }),
      'stay',
    );
    own[name] = { guest: guest.id, conversation: conversation.id, message: message.id, task: task.id, stay: stay.id };
  }
  await created(
    await call(app, 'POST', '/knowledge', {
      token: admin.token,
      body: { title: 'Breakfast hours', content: 'Breakfast is served from 7 to 10.', category: 'dining' },
    }),
    'knowledge',
  );
  await created(
    await call(app, 'PUT', '/settings/custom.colour', { token: admin.token, body: { value: { primary: '#123456' } } }),
    'setting',
  );
  return { app, admin, manager, alice, bob, own };
}

/** Totals of every list an admin sees: a fingerprint to prove hostile requests changed nothing. */
export async function totals(w: World): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const list of ['/guests', '/conversations', '/tasks', '/stays', '/knowledge', '/staff']) {
    const res = await call(w.app, 'GET', `${list}?limit=100`, { token: w.admin.token });
    assert.equal(res.status, 200, list);
    out[list] = res.data.map((r: { id: string; updatedAt?: string }) => `${r.id}@${r.updatedAt ?? ''}`);
  }
  const settings = await call(w.app, 'GET', '/settings', { token: w.admin.token });
  out['/settings'] = settings.data;
  for (const c of [w.own.alice.conversation, w.own.bob.conversation]) {
    const res = await call(w.app, 'GET', `/conversations/${c}/messages?limit=100`, { token: w.admin.token });
    out[c] = res.data.map((m: { id: string }) => m.id);
  }
  return out;
}

/** Like `call`, but the URL is sent exactly as given (call prefixes /api/v1 to most paths). */
export async function callExact(app: FastifyInstance, method: string, url: string, token?: string): Promise<Res> {
  const at = performance.now();
  const raw = await app.inject({
    method: method as 'GET',
    url,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  let body: unknown;
  try {
    body = raw.body === '' ? undefined : JSON.parse(raw.body);
  } catch {
    body = raw.body;
  }
  const ms = performance.now() - at;
  return { status: raw.statusCode, headers: raw.headers, body, raw, data: (body as { data?: unknown })?.data, ms };
}
