// Owns reading what providers post into the API's terms: Meta's webhook entries (guest messages and
// delivery statuses) for our number only, Twilio's status names, and an inbound e-mail (its text,
// thread, de-duplication key, and whether a machine sent it). Read field by field: whatever is
// missing or of another shape is skipped, never an error the provider would retry forever.
import { createHash } from 'node:crypto';
import { type ParsedMail, simpleParser } from 'mailparser';
import type { StatusChange } from './delivery.js';
import { htmlText } from './html-text.js';
import { contentOf, type Inbound, MAX_CONTENT } from './inbound.js';

const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A provider's Unix time in seconds as an ISO time; undefined when absent or absurd. */
function unixTime(v: unknown): string | undefined {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > 32_503_680_000) return undefined;
  return new Date(n * 1000).toISOString();
}

export interface MetaStatus {
  id: string;
  change: StatusChange;
}

export interface MetaWebhook {
  messages: Inbound[];
  statuses: MetaStatus[];
  skipped: number;
  /** Of the skipped, the items of changes for another number. */
  foreign: number;
}

/** The text of a WhatsApp message of any type: a media message is named, with its caption. */
function whatsappContent(m: Record<string, unknown>): string | null {
  const type = str(m.type) ?? 'unknown';
  const part = obj(m[type]);
  if (type === 'text') return str(part?.body) ?? null;
  if (type === 'reaction') return null; // a reaction to a message, not a message
  if (type === 'button') return str(part?.text) ?? '[button]';
  if (type === 'interactive') {
    const reply = obj(part?.button_reply) ?? obj(part?.list_reply);
    return str(reply?.title) ?? '[interactive reply]';
  }
  if (type === 'location') {
    const where = [part?.name, part?.address].filter((x) => typeof x === 'string' && x !== '').join(', ');
    return `[location] ${part?.latitude ?? '?'},${part?.longitude ?? '?'}${where ? ` ${where}` : ''}`;
  }
  const caption = str(part?.caption);
  return `[${type}]${caption ? ` ${caption}` : ''}`;
}

const META_STATUS: Record<string, StatusChange['status']> = {
  sent: 'sent',
  delivered: 'delivered',
  read: 'read',
  failed: 'failed',
};

/**
 * The messages and statuses of Meta's webhook for our number (`phoneNumberId`, or none when the
 * Cloud API is not configured): a change for another number of the same app (a sister hotel's),
 * or naming none, is counted as skipped with each of its items, and nothing of it is read.
 */
export function readMetaWebhook(body: { entry: unknown[] }, phoneNumberId: string | null): MetaWebhook {
  const out: MetaWebhook = { messages: [], statuses: [], skipped: 0, foreign: 0 };
  for (const entry of body.entry) {
    for (const change of arr(obj(entry)?.changes)) {
      const value = obj(obj(change)?.value);
      if (value === undefined) {
        out.skipped++;
        continue;
      }
      if (phoneNumberId === null || str(obj(value.metadata)?.phone_number_id) !== phoneNumberId) {
        const items = Math.max(1, arr(value.messages).length + arr(value.statuses).length);
        out.skipped += items;
        out.foreign += items;
        continue;
      }
      const names = new Map<string, string>();
      for (const c of arr(value.contacts)) {
        const id = str(obj(c)?.wa_id);
        const name = str(obj(obj(c)?.profile)?.name);
        if (id && name) names.set(id, name);
      }
      for (const raw of arr(value.messages)) {
        const m = obj(raw);
        const id = str(m?.id);
        const from = str(m?.from);
        const content = m && whatsappContent(m);
        if (!id || !from || !/^[1-9]\d{6,14}$/.test(from) || content === null || content === undefined) {
          out.skipped++;
          continue;
        }
        out.messages.push({
          channel: 'whatsapp',
          sender: { phone: `+${from}`, name: names.get(from) ?? null },
          content: contentOf(content, '[empty message]'),
          providerId: id,
        });
      }
      for (const raw of arr(value.statuses)) {
        const s = obj(raw);
        const id = str(s?.id);
        const status = META_STATUS[str(s?.status) ?? ''];
        if (!id || !status) {
          out.skipped++;
          continue;
        }
        const err = obj(arr(s?.errors)[0]);
        const detail = str(obj(err?.error_data)?.details) ?? str(err?.message) ?? str(err?.title);
        out.statuses.push({
          id,
          change: {
            status,
            at: unixTime(s?.timestamp),
            ...(status === 'failed'
              ? {
                  error: {
                    code: `WHATSAPP_${err?.code ?? 'FAILED'}`,
                    message: (detail ?? 'WhatsApp reported the message as failed').slice(0, 2000),
                  },
                }
              : {}),
          },
        });
      }
    }
  }
  return out;
}

/** A Twilio MessageStatus as a status change; null for the steps before `sent` and unknown names. */
export function twilioStatus(form: { MessageStatus: string; ErrorCode?: string; ErrorMessage?: string }) {
  const s = form.MessageStatus.toLowerCase();
  if (s === 'sent' || s === 'delivered' || s === 'read') return { status: s } as StatusChange;
  if (s === 'failed' || s === 'undelivered') {
    const code = form.ErrorCode ? `TWILIO_${form.ErrorCode.replace(/[^A-Za-z0-9]/g, '')}` : 'PROVIDER_REJECTED';
    const message =
      form.ErrorMessage ?? `Twilio reported the message as ${s}${form.ErrorCode ? ` (error ${form.ErrorCode})` : ''}`;
    return { status: 'failed', error: { code, message: message.slice(0, 2000) } } as StatusChange;
  }
  return null;
}

/** Angle-bracketed Message-IDs in a header value (References holds several). */
function messageIds(v: string | string[] | undefined): string[] {
  const all = Array.isArray(v) ? v.join(' ') : (v ?? '');
  return all.match(/<[^<>\s]+>/g) ?? [];
}

/** The headers an author's mail program writes: a relay adds trace headers, never changes these. */
const AUTHORED = new Set(['from', 'to', 'cc', 'subject', 'date', 'in-reply-to', 'references', 'content-type']);

/**
 * The de-duplication key of an e-mail without a Message-ID: a digest of its authored headers and
 * its body, so a relay posting it again (even after adding a Received header) finds it stored.
 */
function emailDigest(raw: string): string {
  const split = /\r?\n\r?\n/.exec(raw);
  const head = split === null ? raw : raw.slice(0, split.index);
  const body = split === null ? '' : raw.slice(split.index + split[0].length);
  const hash = createHash('sha256');
  // Unfolded, one header a line; the value with its whitespace collapsed.
  for (const line of head.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, Math.max(colon, 0)).trim().toLowerCase();
    const value = line
      .slice(colon + 1)
      .replace(/\s+/g, ' ')
      .trim();
    if (AUTHORED.has(name)) hash.update(`${name}:${value}\n`);
  }
  hash.update('\n').update(body.replace(/\r\n/g, '\n').trimEnd(), 'latin1');
  return hash.digest('hex');
}

/**
 * Whether a machine sent the mail, so it gets no auto reply (RFC 3834 §2, §3.1): Auto-Submitted
 * other than `no`, bulk or list mail (Precedence, List-Id, List-Unsubscribe), and bounces (a null
 * Return-Path, a MAILER-DAEMON or postmaster sender, a multipart/report).
 */
function automated(mail: ParsedMail, address: string): boolean {
  const header = (name: string) => {
    const line = mail.headerLines.find((l) => l.key === name)?.line;
    return line === undefined ? undefined : line.slice(line.indexOf(':') + 1).trim();
  };
  const auto = header('auto-submitted');
  if (auto !== undefined && auto.split(/[;(\s]/)[0]!.toLowerCase() !== 'no') return true;
  if (['bulk', 'list', 'junk'].includes((header('precedence') ?? '').toLowerCase())) return true;
  if (header('list-id') !== undefined || header('list-unsubscribe') !== undefined) return true;
  const returnPath = header('return-path');
  if (returnPath !== undefined && /^<?\s*>?$/.test(returnPath)) return true;
  if (['mailer-daemon', 'postmaster'].includes(address.split('@')[0]!.toLowerCase())) return true;
  const type = mail.headers.get('content-type') as { value?: unknown } | undefined;
  return typeof type?.value === 'string' && type.value.toLowerCase() === 'multipart/report';
}

/** An RFC 822 message (as latin1 text, byte for byte) as an inbound e-mail; null when it has no usable sender. */
export async function readEmail(raw: string): Promise<Inbound | null> {
  // HTML-only mail is read by htmlText, whose work is bounded, not by the parser's converter.
  const mail = await simpleParser(Buffer.from(raw, 'latin1'), {
    skipImageLinks: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipHtmlToText: true,
  });
  const from = mail.from?.value?.[0];
  const address = from?.address?.trim();
  if (!address) return null;
  let text = (mail.text ?? '').trim();
  if (text === '' && typeof mail.html === 'string') text = htmlText(mail.html, MAX_CONTENT);
  const attachments = mail.attachments?.length ?? 0;
  const note = attachments > 0 ? `\n[${attachments} attachment${attachments === 1 ? '' : 's'}]` : '';
  // Newest first: In-Reply-To names the message answered; References the thread, oldest first.
  const thread = [...messageIds(mail.inReplyTo), ...messageIds(mail.references).reverse()];
  const messageId = mail.messageId ?? null;
  return {
    channel: 'email',
    sender: { email: address, name: from?.name || null },
    content: contentOf(`${text}${note}`, '[empty e-mail]'),
    providerId: messageId,
    ...(messageId === null ? { dedupKey: `email#sha256:${emailDigest(raw)}` } : {}),
    thread,
    subject: mail.subject?.trim() || null,
    automated: automated(mail, address),
  };
}
