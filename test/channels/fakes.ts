// Real stand-ins for the channel providers, on 127.0.0.1 and random ports, closed when the test
// ends: an SMTP server (npm smtp-server, messages parsed with mailparser), a Twilio-shaped
// Messages API and a Meta WhatsApp Cloud-shaped API (node:http). Each records what reached it and
// can be told to refuse the next N attempts (temporary or permanent), to answer late, or to hang;
// the HTTP fakes also to accept without an id or to drop the connection once the body is in.
// Plus the app environment that points the app at them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** Short dispatcher timings so a test's retries and timeouts take milliseconds. */
export const FAST_CHANNELS: Record<string, string> = {
  CHANNEL_POLL_INTERVAL_MS: '50',
  CHANNEL_RETRY_BASE_MS: '20',
  // Long enough for a whole SMTP dialogue (with AUTH) in a cold process on a busy machine: an
  // attempt cut off after the server took the message is retried, and the test would see it twice
  // (at least once is the contract; these tests count exactly). A hang costs this much.
  CHANNEL_SEND_TIMEOUT_MS: '2000',
  // Tests poll a message's state many times a second.
  RATE_LIMIT_STANDARD: '1000000',
};

export const PUBLIC_URL = 'https://guest-api.hotel.test';

// ---------------------------------------------------------------------------------------------
// SMTP

export interface ReceivedMail {
  /** The envelope. */
  mailFrom: string;
  rcptTo: string[];
  /** The authenticated user, if the client logged in. */
  user: string | null;
  /** The parsed message; `from` is the header's address, `fromName` its display name. */
  from: string;
  fromName: string;
  to: string;
  subject: string;
  text: string;
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  raw: string;
  /** The files attached, as parsed. */
  attachments: { filename: string; contentType: string; content: Buffer }[];
}

export interface FakeSmtp {
  /** `smtp://[user:pass@]127.0.0.1:port`, for SMTP_URL. */
  url: string;
  port: number;
  /** Every message accepted (answered 250), in order. */
  received: ReceivedMail[];
  /** Every DATA the server saw, accepted or refused: the number of send attempts. */
  attempts(): number;
  /** Sessions opened so far, how many are open now (closed by either side), and the most at once. */
  sessions(): { opened: number; open: number; most: number };
  /**
   * Refuse the next `n` messages with `code` (4xx temporary, 5xx permanent) after DATA, or with
   * 'hang' never answer their DATA at all.
   */
  refuseNext(code: number | 'hang', n?: number, text?: string): void;
  /** Accept the next message only `ms` after its DATA ended (a slow server's final answer). */
  answerLate(ms: number): void;
  /** Never answer the next session's RCPT TO: it stalls before the message is transmitted. */
  stallNext(): void;
}

/**
 * An SMTP server that records every message it accepts. With `auth`, clients must log in with that
 * user and password (PLAIN/LOGIN over the plain connection, as on a local relay); without, AUTH is
 * not offered. STARTTLS is not offered (no certificate on loopback).
 */
export async function fakeSmtp(t: TestContext, auth?: { user: string; pass: string }): Promise<FakeSmtp> {
  const received: ReceivedMail[] = [];
  const refusals: { code: number | 'hang'; text: string }[] = [];
  const late: number[] = [];
  let stalls = 0;
  let attempts = 0;
  let opened = 0;
  let open = 0;
  let most = 0;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !auth,
    allowInsecureAuth: true,
    logger: false,
    // Sessions left hanging are cut when the test closes the server, not 30 s later.
    closeTimeout: 50,
    onConnect(_session, cb) {
      opened++;
      open++;
      most = Math.max(most, open);
      cb();
    },
    onClose() {
      open--;
    },
    onRcptTo(_address, _session, cb) {
      if (stalls > 0) {
        stalls--;
        return;
      }
      cb();
    },
    onAuth(a, _session, cb) {
      if (auth && a.username === auth.user && a.password === auth.pass) cb(null, { user: a.username });
      else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        attempts++;
        const refusal = refusals.shift();
        if (refusal?.code === 'hang') return;
        if (refusal) {
          cb(Object.assign(new Error(refusal.text), { responseCode: refusal.code }));
          return;
        }
        const raw = Buffer.concat(chunks);
        const delay = late.shift() ?? 0;
        const accept = () =>
          simpleParser(raw).then(
            (mail) => {
              const refs = mail.references;
              received.push({
                mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                rcptTo: session.envelope.rcptTo.map((r) => r.address),
                user: typeof session.user === 'string' ? session.user : null,
                from: mail.from?.value[0]?.address ?? '',
                fromName: mail.from?.value[0]?.name ?? '',
                to: Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? ''),
                subject: mail.subject ?? '',
                text: (mail.text ?? '').replace(/\n$/, ''),
                messageId: mail.messageId ?? '',
                inReplyTo: mail.inReplyTo ?? null,
                references: refs === undefined ? [] : Array.isArray(refs) ? refs : [refs],
                raw: raw.toString('utf8'),
                attachments: mail.attachments.map((a) => ({
                  filename: a.filename ?? '',
                  contentType: a.contentType,
                  content: a.content,
                })),
              });
              cb();
            },
            (err: Error) => cb(err),
          );
        if (delay > 0) setTimeout(accept, delay);
        else accept();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.on('error', () => {});
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  // biome-ignore lint/suspicious/noExplicitAny: smtp-server's typings do not expose the net server.
  const port = ((server as any).server.address() as AddressInfo).port;
  const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : '';
  return {
    url: `smtp://${cred}127.0.0.1:${port}`,
    port,
    received,
    attempts: () => attempts,
    sessions: () => ({ opened, open, most }),
    answerLate(ms) {
      late.push(ms);
    },
    stallNext() {
      stalls++;
    },
    refuseNext(code, n = 1, text) {
      const reason =
        text ??
        (code === 'hang'
          ? ''
          : code < 500
            ? `${code} 4.7.1 Greylisted, try again later`
            : `${code} 5.1.1 Mailbox unavailable`);
      for (let i = 0; i < n; i++) refusals.push({ code, text: reason });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP fakes (Twilio, Meta)

/**
 * How the next attempts are answered: an HTTP status with the provider's error body; no answer
 * ('hang'); the connection dropped once the whole body was read ('reset': the provider may have
 * taken it); or accepted with the provider's 2xx but no id in the answer ('no-id').
 */
export type Failure = { status: number; code?: number; message?: string } | 'hang' | 'reset' | 'no-id';

export interface HttpRequestRecord {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** What it was answered: a status, 'hang', 'reset', or a 2xx without an id ('no-id'). */
  answered: number | 'hang' | 'reset' | 'no-id' | 'unauthorized';
}

interface HttpFake {
  base: string;
  /** Every request that reached the fake, in order, answered or not. */
  requests: HttpRequestRecord[];
  failNext(failure: Failure, n?: number): void;
}

async function httpFake(
  t: TestContext,
  handle: (req: IncomingMessage, body: string, res: ServerResponse, record: HttpRequestRecord) => void,
): Promise<{ server: Server; base: string; requests: HttpRequestRecord[]; failures: Failure[] }> {
  const requests: HttpRequestRecord[] = [];
  const failures: Failure[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const record: HttpRequestRecord = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        answered: 0,
      };
      requests.push(record);
      handle(req, body, res, record);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hung requests and kept-alive sockets would hold close() forever.
        server.closeAllConnections();
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}`, requests, failures };
}

function json(res: ServerResponse, record: HttpRequestRecord, status: number, body: unknown): void {
  record.answered = status;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export interface TwilioMessage {
  /** Null when the answer carried none ('no-id'). */
  sid: string | null;
  accountSid: string;
  form: Record<string, string>;
  /** Every MediaUrl of the form, in order. */
  media: string[];
}

export interface FakeTwilio extends HttpFake {
  accountSid: string;
  authToken: string;
  /** Messages answered 201, in order. */
  accepted: TwilioMessage[];
  /**
   * A guest's MMS file Twilio keeps: its URL, served only with the account's Basic auth (as
   * Twilio does when HTTP Basic authentication for media is on).
   */
  addMedia(bytes: Buffer, contentType: string): string;
}

/**
 * Twilio's Messages API: `POST /2010-04-01/Accounts/:sid/Messages.json`, HTTP Basic auth
 * `sid:token`, a form body; answers 201 `{ sid: "SM…", status: "queued", … }`, or on demand a
 * failure with Twilio's error body `{ code, message, more_info, status }`, or nothing at all.
 */
export async function fakeTwilio(t: TestContext): Promise<FakeTwilio> {
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const accepted: TwilioMessage[] = [];
  const media = new Map<string, { bytes: Buffer; contentType: string }>();
  const fake = await httpFake(t, (req, body, res, record) => {
    const file = media.get(req.url ?? '');
    if (req.method === 'GET' && file !== undefined) {
      if (req.headers.authorization !== `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`) {
        json(res, record, 401, { code: 20003, message: 'Authenticate', status: 401 });
        return;
      }
      record.answered = 200;
      res.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length });
      res.end(file.bytes);
      return;
    }
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(req.url ?? '');
    if (req.method !== 'POST' || m === null) {
      json(res, record, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
      return;
    }
    const expected = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
    if (req.headers.authorization !== expected || decodeURIComponent(m[1]!) !== accountSid) {
      json(res, record, 401, { code: 20003, message: 'Authenticate', status: 401 });
      record.answered = 'unauthorized';
      return;
    }
    const failure = fake.failures.shift();
    if (failure === 'hang' || failure === 'reset') {
      record.answered = failure;
      if (failure === 'reset') req.socket.destroy();
      return;
    }
    if (failure !== undefined && failure !== 'no-id') {
      json(res, record, failure.status, {
        code: failure.code ?? (failure.status === 429 ? 20429 : failure.status >= 500 ? 20500 : 21211),
        message: failure.message ?? `Fake failure ${failure.status}`,
        more_info: 'https://www.twilio.com/docs/errors',
        status: failure.status,
      });
      return;
    }
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
      json(res, record, 400, { code: 20001, message: 'Expected a form body', status: 400 });
      return;
    }
    const params = new URLSearchParams(body);
    const form = Object.fromEntries(params);
    const mediaUrls = params.getAll('MediaUrl');
    // Twilio takes a message without Body when it carries media.
    if (!form.To || !form.From || (!form.Body && mediaUrls.length === 0)) {
      json(res, record, 400, { code: 21604, message: "A 'To', 'From' and 'Body' are required", status: 400 });
      return;
    }
    if (failure === 'no-id') {
      accepted.push({ sid: null, accountSid, form, media: mediaUrls });
      json(res, record, 201, { status: 'queued', to: form.To, body: form.Body });
      record.answered = 'no-id';
      return;
    }
    const sid = `SM${randomBytes(16).toString('hex')}`;
    accepted.push({ sid, accountSid, form, media: mediaUrls });
    json(res, record, 201, {
      sid,
      account_sid: accountSid,
      to: form.To,
      from: form.From,
      body: form.Body,
      status: 'queued',
      num_segments: '1',
      direction: 'outbound-api',
      date_created: new Date().toUTCString(),
      error_code: null,
      error_message: null,
    });
  });
  return {
    base: fake.base,
    requests: fake.requests,
    accountSid,
    authToken,
    accepted,
    failNext(failure, n = 1) {
      for (let i = 0; i < n; i++) fake.failures.push(failure);
    },
    addMedia(bytes, contentType) {
      const path = `/2010-04-01/Accounts/${accountSid}/Messages/MM${randomBytes(16).toString('hex')}/Media/ME${randomBytes(16).toString('hex')}`;
      media.set(path, { bytes, contentType });
      return `${fake.base}${path}`;
    },
  };
}

export interface MetaMessage {
  /** Null when the answer carried none ('no-id'). */
  wamid: string | null;
  phoneNumberId: string;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON body as sent, asserted on by tests.
  body: any;
}

export interface FakeMeta extends HttpFake {
  phoneNumberId: string;
  accessToken: string;
  /** Messages answered 200, in order. */
  accepted: MetaMessage[];
  /**
   * A guest's media Meta keeps: its media id, which `GET /:id` (bearer) resolves to a download URL
   * and its type, and that URL serves (bearer again), as the Graph API does.
   */
  addMedia(bytes: Buffer, mimeType: string): string;
}

/**
 * Meta's WhatsApp Cloud API: `POST /:phoneNumberId/messages` with a bearer token and a JSON body;
 * answers `{ messaging_product, contacts: [{ input, wa_id }], messages: [{ id: "wamid.…" }] }`, or
 * on demand a failure with Meta's error body `{ error: { message, type, code, fbtrace_id } }`, or
 * nothing at all.
 */
export async function fakeMeta(t: TestContext): Promise<FakeMeta> {
  const phoneNumberId = String(100_000_000_000_000 + Math.floor(Math.random() * 1e9));
  const accessToken = `EAAG${randomBytes(24).toString('hex')}`;
  const accepted: MetaMessage[] = [];
  const media = new Map<string, { bytes: Buffer; mimeType: string }>();
  const error = (res: ServerResponse, record: HttpRequestRecord, status: number, code: number, message: string) =>
    json(res, record, status, { error: { message, type: 'OAuthException', code, fbtrace_id: 'AbCdEf' } });
  const fake = await httpFake(t, (req, body, res, record) => {
    if (req.method === 'GET') {
      const download = /^\/download\/([^/?]+)$/.exec(req.url ?? '');
      const id = download?.[1] ?? /^\/([^/?]+)$/.exec(req.url ?? '')?.[1];
      const file = id === undefined ? undefined : media.get(id);
      if (file === undefined) return error(res, record, 404, 100, 'Unknown media');
      if (req.headers.authorization !== `Bearer ${accessToken}`) {
        return error(res, record, 401, 190, 'Invalid OAuth access token');
      }
      if (download === null) {
        return json(res, record, 200, {
          messaging_product: 'whatsapp',
          url: `${fake.base}/download/${id}`,
          mime_type: file.mimeType,
          file_size: file.bytes.length,
          id,
        });
      }
      record.answered = 200;
      res.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.bytes.length });
      res.end(file.bytes);
      return;
    }
    const m = /^\/([^/]+)\/messages$/.exec(req.url ?? '');
    if (req.method !== 'POST' || m === null) {
      error(res, record, 404, 803, 'Unknown path');
      return;
    }
    if (req.headers.authorization !== `Bearer ${accessToken}` || m[1] !== phoneNumberId) {
      error(res, record, 401, 190, 'Invalid OAuth access token');
      record.answered = 'unauthorized';
      return;
    }
    const failure = fake.failures.shift();
    if (failure === 'hang' || failure === 'reset') {
      record.answered = failure;
      if (failure === 'reset') req.socket.destroy();
      return;
    }
    if (failure !== undefined && failure !== 'no-id') {
      const code = failure.code ?? (failure.status === 429 ? 130429 : failure.status >= 500 ? 131000 : 131026);
      error(res, record, failure.status, code, failure.message ?? `Fake failure ${failure.status}`);
      return;
    }
    // biome-ignore lint/suspicious/noExplicitAny: the JSON body as sent.
    let parsed: any;
    try {
      parsed = JSON.parse(body);
    } catch {
      error(res, record, 400, 100, 'Invalid JSON');
      return;
    }
    if (parsed?.messaging_product !== 'whatsapp' || typeof parsed.to !== 'string') {
      error(res, record, 400, 100, 'Invalid parameter');
      return;
    }
    if (failure === 'no-id') {
      accepted.push({ wamid: null, phoneNumberId, body: parsed });
      json(res, record, 200, { messaging_product: 'whatsapp' });
      record.answered = 'no-id';
      return;
    }
    const wamid = `wamid.${randomBytes(24).toString('base64url')}`;
    accepted.push({ wamid, phoneNumberId, body: parsed });
    json(res, record, 200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: parsed.to, wa_id: parsed.to }],
      messages: [{ id: wamid }],
    });
  });
  return {
    base: fake.base,
    requests: fake.requests,
    phoneNumberId,
    accessToken,
    accepted,
    failNext(failure, n = 1) {
      for (let i = 0; i < n; i++) fake.failures.push(failure);
    },
    addMedia(bytes, mimeType) {
      const id = String(1_000_000_000_000 + Math.floor(Math.random() * 1e12));
      media.set(id, { bytes, mimeType });
      return id;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The app's environment for the fakes

export const EMAIL_FROM = 'Hotel Miramar <frontdesk@miramar.test>';
export const SMS_FROM = '+15005550006';
export const WHATSAPP_FROM = '+15005550007';

export function smtpEnv(smtp: FakeSmtp, from = EMAIL_FROM): Record<string, string> {
  return { SMTP_URL: smtp.url, EMAIL_FROM: from };
}

/** Twilio for SMS (and, with `whatsapp`, for WhatsApp through `whatsapp:` addresses). */
export function twilioEnv(
  twilio: FakeTwilio,
  o: { sms?: boolean; whatsapp?: boolean } = { sms: true },
): Record<string, string> {
  return {
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_URL: twilio.base,
    PUBLIC_URL,
    ...(o.sms ? { TWILIO_SMS_FROM: SMS_FROM } : {}),
    ...(o.whatsapp ? { TWILIO_WHATSAPP_FROM: WHATSAPP_FROM } : {}),
  };
}

export function metaEnv(meta: FakeMeta): Record<string, string> {
  return {
    WHATSAPP_ACCESS_TOKEN: meta.accessToken,
    WHATSAPP_PHONE_NUMBER_ID: meta.phoneNumberId,
    WHATSAPP_API_URL: meta.base,
  };
}

/** Waits (bounded) until `cond` holds; fails the test with `what` if it never does. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, tries = 1500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await sleep(10);
  }
  assert.fail(`never happened: ${what}`);
}
