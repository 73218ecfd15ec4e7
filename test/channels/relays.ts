// Inbound e-mail as the relays post it, written from each provider's documentation (not from the
// API's code): SendGrid Inbound Parse with "POST the raw, full MIME message" (multipart/form-data,
// the message in `email`), Mailgun's forward() to a URL ending in "mime" (the message in
// `body-mime`, with Mailgun's timestamp, token and signature), and Postmark's inbound webhook JSON
// (with `RawEmail` when "include raw email content" is on, else only its parsed fields).
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { call, type Res } from '../helpers.js';
import { EMAIL_SECRET } from './signing.js';

export const EMAIL_ROUTE = '/api/v1/channels/email/inbound';
export const basic = (password: string) => `Basic ${Buffer.from(`relay:${password}`).toString('base64')}`;

type Part = [name: string, value: string | Buffer, file?: { filename: string; type: string }];

/** A multipart/form-data body, part by part, as a relay's HTTP library writes it. */
export function multipart(parts: Part[], boundary = `xYzZY${randomBytes(6).toString('hex')}`) {
  const chunks: Buffer[] = [];
  for (const [name, value, file] of parts) {
    const disposition = file
      ? `form-data; name="${name}"; filename="${file.filename}"\r\nContent-Type: ${file.type}`
      : `form-data; name="${name}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`, 'latin1'));
    chunks.push(Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8'));
    chunks.push(Buffer.from('\r\n', 'latin1'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** SendGrid Inbound Parse, raw mode: the full message in `email`, beside the fields it always sends. */
export function sendgridRaw(raw: string | Buffer, from = 'guest@example.test') {
  return multipart([
    ['headers', ''],
    ['dkim', '{@example.test : pass}'],
    ['email', raw],
    ['to', 'desk@parse.hotel.example.test'],
    ['from', from],
    ['sender_ip', '209.85.220.41'],
    ['spam_report', 'Spam detection software, running on the system "parsley-p1iad2-spamassassin"...'],
    ['envelope', JSON.stringify({ to: ['desk@parse.hotel.example.test'], from })],
    ['subject', 'Hello'],
    ['spam_score', '0.012'],
    ['charsets', JSON.stringify({ to: 'UTF-8', subject: 'UTF-8', from: 'UTF-8' })],
    ['SPF', 'pass'],
  ]);
}

/** Mailgun's fields around the raw message, signed as Mailgun signs (HMAC-SHA256 of timestamp + token). */
export function mailgunFields(raw: string, signingKey = 'mailgun-test-signing-key'): [string, string][] {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const token = randomBytes(25).toString('hex');
  return [
    ['recipient', 'desk@mg.hotel.example.test'],
    ['sender', 'guest@example.test'],
    ['subject', 'Hello'],
    ['from', 'Ana Lopes <guest@example.test>'],
    ['X-Mailgun-Incoming', 'Yes'],
    ['X-Envelope-From', '<guest@example.test>'],
    ['body-mime', raw],
    ['timestamp', timestamp],
    ['token', token],
    [
      'signature',
      createHmac('sha256', signingKey)
        .update(timestamp + token)
        .digest('hex'),
    ],
  ];
}

/** Postmark's inbound webhook JSON for a plain-text e-mail (its documented example, our values). */
export function postmarkJson(o: {
  from: string;
  name?: string;
  subject?: string;
  text?: string;
  html?: string;
  headers?: [string, string][];
  raw?: string;
  postmarkId?: string;
  attachments?: number;
}) {
  return {
    FromName: o.name ?? '',
    MessageStream: 'inbound',
    From: o.from,
    FromFull: { Email: o.from, Name: o.name ?? '', MailboxHash: '' },
    To: '"Front Desk" <desk@inbound.hotel.example.test>',
    ToFull: [{ Email: 'desk@inbound.hotel.example.test', Name: 'Front Desk', MailboxHash: '' }],
    Cc: '',
    CcFull: [],
    Bcc: '',
    BccFull: [],
    OriginalRecipient: 'desk@inbound.hotel.example.test',
    Subject: o.subject ?? 'Hello',
    MessageID: o.postmarkId ?? '73e6d360-66eb-11e1-8e72-a8904824019b',
    ReplyTo: '',
    MailboxHash: '',
    Date: 'Wed, 25 Nov 2026 09:00:00 +0000',
    TextBody: o.text ?? '',
    HtmlBody: o.html ?? '',
    StrippedTextReply: '',
    Tag: '',
    Headers: [
      { Name: 'X-Spam-Checker-Version', Value: 'SpamAssassin 3.3.1 (2010-03-16) on rs-ord-pm-inbound1.wildbit.com' },
      { Name: 'X-Spam-Status', Value: 'No' },
      { Name: 'X-Spam-Score', Value: '-0.1' },
      { Name: 'MIME-Version', Value: '1.0' },
      ...(o.headers ?? []).map(([Name, Value]) => ({ Name, Value })),
    ],
    Attachments: Array.from({ length: o.attachments ?? 0 }, (_, i) => ({
      Name: `photo-${i}.jpg`,
      Content: 'VGhpcyBpcyBhdHRhY2htZW50IGNvbnRlbnRzLCBiYXNlLTY0IGVuY29kZWQu',
      ContentType: 'image/jpeg',
      ContentLength: 45,
    })),
    ...(o.raw !== undefined ? { RawEmail: o.raw } : {}),
  };
}

/** POSTs a relay's body to the inbound e-mail route (or `path` under it), with the Basic password. */
export function postRelay(
  app: FastifyInstance,
  body: string | Buffer,
  type: string,
  o: { path?: string; password?: string } = {},
): Promise<Res> {
  return call(app, 'POST', `${EMAIL_ROUTE}${o.path ?? ''}`, {
    body,
    headers: { 'content-type': type, authorization: basic(o.password ?? EMAIL_SECRET) },
  });
}
