// Owns reading an inbound e-mail into the API's terms, however the relay handed it over: the raw
// RFC 822 message (posted as is, or inside SendGrid's, Mailgun's or Postmark's body), or Postmark's
// parsed fields when it sends no raw message. Either way the same parts are read the same way: the
// sender, the text (else the text of the HTML), the thread it answers, its Message-ID (else a
// digest, to store it once), its subject, and whether a machine sent it.
import { createHash } from 'node:crypto';
import type { PostmarkInbound } from './email-schemas.js';
import { htmlText } from './html-text.js';
import { contentOf, type Inbound, MAX_CONTENT } from './inbound.js';

/** Angle-bracketed Message-IDs in a header value (References holds several). */
function messageIds(v: string | string[] | undefined): string[] {
  const all = Array.isArray(v) ? v.join(' ') : (v ?? '');
  return all.match(/<[^<>\s]+>/g) ?? [];
}

/** A Message-ID as mailparser gives it (within angle brackets), so every route stores it alike. */
function messageIdOf(v: string | undefined): string | null {
  const id = (v ?? '').trim();
  if (id === '') return null;
  return `${id.startsWith('<') ? '' : '<'}${id}${id.endsWith('>') ? '' : '>'}`;
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

/** A header's value by its name (lower case), as the message or the relay gives it. */
type HeaderOf = (name: string) => string | undefined;

/**
 * Whether a machine sent the mail, so it gets no auto reply (RFC 3834 §2, §3.1): Auto-Submitted
 * other than `no`, bulk or list mail (Precedence, List-Id, List-Unsubscribe), and bounces (a null
 * Return-Path, a MAILER-DAEMON or postmaster sender, a multipart/report).
 */
function automated(header: HeaderOf, address: string): boolean {
  const auto = header('auto-submitted');
  if (auto !== undefined && auto.split(/[;(\s]/)[0]!.toLowerCase() !== 'no') return true;
  if (['bulk', 'list', 'junk'].includes((header('precedence') ?? '').trim().toLowerCase())) return true;
  if (header('list-id') !== undefined || header('list-unsubscribe') !== undefined) return true;
  const returnPath = header('return-path');
  if (returnPath !== undefined && /^<?\s*>?$/.test(returnPath.trim())) return true;
  if (['mailer-daemon', 'postmaster'].includes(address.split('@')[0]!.toLowerCase())) return true;
  return /^multipart\/report\s*(;|$)/i.test((header('content-type') ?? '').trim());
}

/** The text a message stores: the plain text, else the text of the HTML; attachments counted. */
function textOf(text: string | undefined, html: string | undefined, attachments: number, fallback: string): string {
  let t = (text ?? '').trim();
  if (t === '' && html) t = htmlText(html, MAX_CONTENT);
  const note = attachments > 0 ? `\n[${attachments} attachment${attachments === 1 ? '' : 's'}]` : '';
  return contentOf(`${t}${note}`, fallback);
}

/** An RFC 822 message (as latin1 text, byte for byte) as an inbound e-mail; null when it has no usable sender. */
export async function readEmail(raw: string): Promise<Inbound | null> {
  // HTML-only mail is read by htmlText, whose work is bounded, not by the parser's converter.
  // Loaded on the first e-mail read: most processes (and every test file but the e-mail ones) read none.
  const { simpleParser } = await import('mailparser');
  const mail = await simpleParser(Buffer.from(raw, 'latin1'), {
    skipImageLinks: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipHtmlToText: true,
  });
  const from = mail.from?.value?.[0];
  const address = from?.address?.trim();
  if (!address) return null;
  const header: HeaderOf = (name) => {
    const line = mail.headerLines.find((l) => l.key === name)?.line;
    return line === undefined ? undefined : line.slice(line.indexOf(':') + 1).trim();
  };
  // Newest first: In-Reply-To names the message answered; References the thread, oldest first.
  const thread = [...messageIds(mail.inReplyTo), ...messageIds(mail.references).reverse()];
  const messageId = mail.messageId || null;
  return {
    channel: 'email',
    sender: { email: address, name: from?.name || null },
    content: textOf(
      mail.text,
      typeof mail.html === 'string' ? mail.html : undefined,
      mail.attachments?.length ?? 0,
      '[empty e-mail]',
    ),
    providerId: messageId,
    ...(messageId === null ? { dedupKey: `email#sha256:${emailDigest(raw)}` } : {}),
    thread,
    subject: mail.subject?.trim() || null,
    automated: automated(header, address),
    // At most ten parts are kept as files, as a message carries at most ten.
    files: (mail.attachments ?? []).slice(0, 10).map((a) => ({
      kind: 'bytes' as const,
      bytes: a.content,
      contentType: a.contentType ?? null,
      filename: a.filename ?? null,
    })),
  };
}

/** The address in a From value: `Name <addr>` or a bare address. */
function addressIn(from: string | undefined): string | undefined {
  const v = (from ?? '').trim();
  return /<([^<>]*)>/.exec(v)?.[1]?.trim() ?? (v === '' ? undefined : v);
}

/**
 * Postmark's parsed fields as an inbound e-mail, when it sends no raw message; null when it names
 * no sender. The headers it passes (`Headers`) give the Message-ID, the thread and the machine
 * signs; without a Message-ID, Postmark's own `MessageID` (the same on each of its retries) keeps
 * the mail to one message.
 */
export function readPostmark(p: PostmarkInbound): Inbound | null {
  const address = p.FromFull?.Email?.trim() || addressIn(p.From);
  if (!address) return null;
  const headers = p.Headers ?? [];
  const header: HeaderOf = (name) => headers.find((h) => h.Name.toLowerCase() === name)?.Value;
  const messageId = messageIdOf(header('message-id'));
  const digest = () =>
    createHash('sha256')
      .update(JSON.stringify([p.From, p.To, p.Cc, p.Subject, p.Date, p.TextBody, p.HtmlBody]))
      .digest('hex');
  return {
    channel: 'email',
    sender: { email: address, name: p.FromFull?.Name?.trim() || p.FromName?.trim() || null },
    content: textOf(p.TextBody, p.HtmlBody, p.Attachments?.length ?? 0, '[empty e-mail]'),
    providerId: messageId,
    ...(messageId === null
      ? { dedupKey: p.MessageID ? `email#postmark:${p.MessageID}` : `email#sha256:${digest()}` }
      : {}),
    thread: [...messageIds(header('in-reply-to')), ...messageIds(header('references')).reverse()],
    subject: p.Subject?.trim() || null,
    automated: automated(header, address),
  };
}
