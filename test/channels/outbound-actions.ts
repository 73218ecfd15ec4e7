// The steps the outbound channel tests repeat, through the API: an app wired to provider fakes,
// an admin, guests with every address, conversations, texts, and waiting for a text's status.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, settledMessage, type TestUser } from '../helpers.js';
import { FAST_CHANNELS, PUBLIC_URL } from './fakes.js';
import { metaPayload, postMeta, twilioSign } from './signing.js';

export type Channel = 'email' | 'sms' | 'whatsapp' | 'web';

/** An app wired to `env` (plus the fast dispatcher timings), an admin, and a guest with every address. */
export async function setup(t: TestContext, env: Record<string, string>, app?: FastifyInstance) {
  const a = app ?? (await buildTestApp(t, { ...FAST_CHANNELS, ...env }));
  const admin = await createStaff(a, 'admin');
  return { app: a, admin, ...actions(a, admin) };
}

let phoneNo = 0;
export function actions(app: FastifyInstance, admin: TestUser) {
  const token = admin.token;
  const guest = async (over: Record<string, unknown> = {}) => {
    phoneNo++;
    const res = await call(app, 'POST', '/guests', {
      token,
      body: {
        name: 'Ana Guest',
        email: `ana.${phoneNo}.${Date.now().toString(36)}@guest.test`,
        phone: `+3519${String(10_000_000 + phoneNo + Math.floor(Math.random() * 80_000_000))}`,
        ...over,
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data as { id: string; email: string | null; phone: string | null };
  };
  const open = async (channel: Channel, over: Record<string, unknown> = {}) => {
    const g = await guest();
    const res = await call(app, 'POST', '/conversations', { token, body: { guestId: g.id, channel, ...over } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return { conversation: res.data as { id: string; subject: string | null }, guest: g };
  };
  const send = async (conversationId: string, content: string, type: 'text' | 'note' = 'text') => {
    const res = await call(app, 'POST', `/conversations/${conversationId}/messages`, {
      token,
      body: { content, type },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data as { id: string; deliveryStatus: string; conversationId: string };
  };
  /** The message once its status is `status` (bounded poll through GET …/messages/:id). */
  const until = (conversationId: string, messageId: string, status: string) =>
    settledMessage(app, token, conversationId, messageId, (m) => m.deliveryStatus === status);
  /** The message once delivery settled it (no longer queued). */
  const settled = (conversationId: string, messageId: string) => settledMessage(app, token, conversationId, messageId);
  const retry = (conversationId: string, messageId: string) =>
    call(app, 'POST', `/conversations/${conversationId}/messages/${messageId}/retry`, { token });
  /** The deliveryStatus of every message.updated event of a message, in feed order. */
  const updates = async (messageId: string): Promise<string[]> => {
    const statuses: string[] = [];
    let after = '0';
    for (;;) {
      const res = await call(app, 'GET', `/events?types=message.updated&limit=100&after=${after}`, { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const e of res.data as { data: { id: string; deliveryStatus: string } }[]) {
        if (e.data.id === messageId) statuses.push(e.data.deliveryStatus);
      }
      if (res.body.meta.nextCursor === null || res.data.length === 0) return statuses;
      after = res.body.meta.nextCursor;
    }
  };
  /** The guest writes on WhatsApp (a signed Meta webhook), opening the 24-hour window for free text. */
  const writesViaMeta = async (phone: string, body = 'Hi, it is me') => {
    const res = await postMeta(
      app,
      metaPayload(
        {
          contacts: [{ profile: { name: 'Ana Guest' }, wa_id: phone.slice(1) }],
          messages: [
            {
              from: phone.slice(1),
              id: `wamid.in${Date.now()}${phoneNo}${Math.random().toString(36).slice(2)}`,
              timestamp: String(Math.floor(Date.now() / 1000)),
              type: 'text',
              text: { body },
            },
          ],
        },
        app.ctx.config.channels.whatsapp?.phoneNumberId,
      ),
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  /** The same through Twilio's inbound webhook (signed with the fake's token against PUBLIC_URL). */
  const writesViaTwilio = async (phone: string, authToken: string, body = 'Hi, it is me') => {
    const url = '/api/v1/channels/twilio/inbound';
    const to = `whatsapp:${app.ctx.config.channels.twilio?.whatsappFrom}`;
    const params = { MessageSid: `SMin${Date.now()}${phoneNo}`, From: `whatsapp:${phone}`, To: to, Body: body };
    const res = await call(app, 'POST', url, {
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSign(PUBLIC_URL + url, params, authToken),
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  const putTemplates = async () => {
    const res = await call(app, 'PUT', '/settings/whatsapp_templates', { token, body: { value: TEMPLATES } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  const sendTemplate = async (conversationId: string, template: object) => {
    const res = await call(app, 'POST', `/conversations/${conversationId}/messages`, {
      token,
      body: { type: 'template', template },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data as { id: string; deliveryStatus: string; content: string };
  };
  return {
    guest,
    open,
    send,
    until,
    settled,
    retry,
    updates,
    writesViaMeta,
    writesViaTwilio,
    putTemplates,
    sendTemplate,
  };
}

export const TEMPLATES = [
  { name: 'room_ready', language: 'en_US', body: 'Hello {{1}}, room {{2}} is ready.' },
  { name: 'welcome', language: 'en_US', body: 'Welcome to the hotel!' },
];
