// Shared fixtures for tests: rows written straight to the store when the module that owns them is
// not under test (a conversation only needs a guest row to point at), and the few HTTP steps many
// tests repeat (log in, open a conversation, check an error envelope).
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { nowIso, toJson } from '../src/db/store.js';
import type { ConversationTable } from '../src/db/types.js';
import { newId } from '../src/lib/ids.js';
import { call, type Res } from './helpers.js';

/**
 * Inserts a guest row with the addresses every channel needs (a unique e-mail and phone; no tags);
 * returns its id.
 */
let guestNo = 0;
export async function insertGuest(app: FastifyInstance, name = 'Ana Guest'): Promise<string> {
  const id = newId('gst');
  guestNo += 1;
  const now = nowIso();
  await app.ctx.store.db
    .insertInto('guests')
    .values({
      id,
      name,
      email: `${id}@example.test`,
      email_lower: `${id}@example.test`,
      phone: `+1555${String(1_000_000 + guestNo)}`,
      tags: toJson([]),
      notes: null,
      search_text: name.toLowerCase(),
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** Inserts an open conversation row without messages; returns its id. */
export async function insertConversation(
  app: FastifyInstance,
  guestId: string,
  over: { channel?: ConversationTable['channel']; assignee?: string | null } = {},
): Promise<string> {
  const id = newId('cnv');
  const now = nowIso();
  await app.ctx.store.db
    .insertInto('conversations')
    .values({
      id,
      guest_id: guestId,
      channel: over.channel ?? 'web',
      status: 'open',
      assignee: over.assignee ?? null,
      subject: null,
      last_message_at: now,
      message_count: 0,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** Inserts an open housekeeping task row for a guest; returns its id. */
export async function insertTask(app: FastifyInstance, guestId: string, assignee: string | null): Promise<string> {
  const id = newId('tsk');
  const now = nowIso();
  await app.ctx.store.db
    .insertInto('tasks')
    .values({
      id,
      title: 'Extra towels',
      description: null,
      department: 'housekeeping',
      priority: 'normal',
      status: 'open',
      guest_id: guestId,
      conversation_id: null,
      assignee,
      notes: null,
      due_at: null,
      completed_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** POST /conversations as `token`, asserting 201; returns the conversation. */
export async function openConversation(app: FastifyInstance, token: string, body: Record<string, unknown>) {
  const res = await call(app, 'POST', '/conversations', { token, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data;
}

/** POST /auth/login; the response as it came (tests assert on refusals too). */
export const login = (app: FastifyInstance, email: string, password: string): Promise<Res> =>
  call(app, 'POST', '/auth/login', { body: { email, password } });

/** An error in the envelope: status, code, a message, JSON, and the request id. */
export function assertError(res: Res, status: number, code: string, what = '') {
  assert.equal(res.status, status, `${what} ${JSON.stringify(res.body)}`);
  assert.equal(res.body?.success, false, what);
  assert.equal(res.body.error.code, code, what);
  assert.equal(typeof res.body.error.message, 'string', what);
  assert.match(String(res.headers['content-type']), /^application\/json/, what);
  assert.ok(res.headers['x-request-id'], `${what} X-Request-Id is set`);
}
