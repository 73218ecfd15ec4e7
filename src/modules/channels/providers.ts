// Owns talking to the providers that carry an outbound text: SMTP (src/modules/channels/smtp.ts),
// Twilio's Messages API (SMS, or WhatsApp with whatsapp: addresses) and Meta's WhatsApp Cloud API.
// Each answers that the provider accepted it (with its id when it gave one), or a failure that says
// whether trying again can help and the provider's reason.
import { createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { ChannelsConfig } from '../../config-channels.js';
import type { Executor } from '../../db/types.js';
import { type SmtpMail, sendSmtp } from './smtp.js';

export type Channel = 'email' | 'sms' | 'whatsapp' | 'web';

/** What a template send carries besides its text (Meta sends the template by name); kept on its job. */
export interface SendTemplate {
  name: string;
  language: string;
  parameters: string[];
}

export interface Outgoing {
  channel: Channel;
  messageId: string;
  content: string;
  email: string | null;
  phone: string | null;
  subject: string;
  /** Message-IDs of the conversation's earlier e-mails, oldest first (threading). */
  references: string[];
  /**
   * A WhatsApp template message: Meta gets the template by name (allowed outside the 24-hour
   * window, where free text is refused); Twilio and the record get `content`, the filled body.
   */
  template: SendTemplate | null;
  /** Written by the API itself (an auto reply), not by a person: e-mail marks it (RFC 3834). */
  automatic: boolean;
  /** The message's stored files, in order (docs/attachments.md); none for most. */
  attachments?: OutgoingFile[];
}

/** A file an outbound message carries: its signed link for providers that fetch, its bytes for e-mail. */
export interface OutgoingFile {
  id: string;
  filename: string;
  contentType: string;
  /** Absolute under PUBLIC_URL, signed, valid about an hour. */
  url: string;
  /** The content, read when the provider takes the bytes themselves (e-mail). */
  open(): Promise<Readable>;
}

/** Reads the stored files of a message for its send (src/modules/attachments/outbound.ts). */
export interface OutboundFiles {
  of(db: Executor, messageId: string): Promise<OutgoingFile[]>;
}

/** What WhatsApp calls a file of this type. */
function whatsappKind(contentType: string): 'image' | 'audio' | 'video' | 'document' {
  if (/^image\/(jpeg|png)$/.test(contentType)) return 'image';
  if (contentType.startsWith('audio/')) return 'audio';
  if (/^video\/(mp4|3gpp)$/.test(contentType)) return 'video';
  return 'document';
}

/**
 * Accepted (any 2xx, SMTP 250), with the provider's id or null when its answer carried none; or a
 * failure.
 */
export type SendResult =
  | { ok: true; externalId: string | null }
  | { ok: false; retryable: boolean; code: string; message: string };

const fail = (retryable: boolean, code: string, message: string): SendResult => ({
  ok: false,
  retryable,
  code,
  message: message.slice(0, 2000),
});

/** Which provider carries a channel, or null when none is configured. */
export function providerFor(c: ChannelsConfig, channel: Channel): 'smtp' | 'twilio' | 'meta' | null {
  if (channel === 'email') return c.email ? 'smtp' : null;
  if (channel === 'sms') return c.twilio?.smsFrom ? 'twilio' : null;
  if (channel === 'whatsapp') return c.whatsapp ? 'meta' : c.twilio?.whatsappFrom ? 'twilio' : null;
  return null;
}

/**
 * The e-mail Message-ID of a message: 128 bits of a keyed HMAC of its id, so it is the same each
 * time it is computed (a resend after a crash keeps it) yet cannot be guessed from another one
 * (message ids are consecutive within a millisecond, and a reply naming a Message-ID is threaded).
 */
export function emailMessageId(c: ChannelsConfig, messageId: string): string {
  const domain = /@([^>\s]+)>?$/.exec(c.email?.from ?? '')?.[1] ?? 'localhost';
  return `<${createHmac('sha256', c.messageIdKey).update(messageId).digest('hex').slice(0, 32)}@${domain}>`;
}

/** A template as Meta's Cloud API takes it: by name and language, the body's parameters in order. */
function metaTemplate(t: SendTemplate) {
  return {
    name: t.name,
    language: { code: t.language },
    components: [{ type: 'body', parameters: t.parameters.map((text) => ({ type: 'text', text })) }],
  };
}

export class Providers {
  constructor(
    private readonly c: ChannelsConfig,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * Sends a text over its channel: a web text is the widget's to show (sent as it is); the dry run
   * sends nothing and says sent (e-mail with its real Message-ID). `signal`: end the attempt early
   * (the instance is stopping, or its lease on the text could not be renewed).
   */
  async send(o: Outgoing, signal: AbortSignal): Promise<SendResult> {
    if (o.channel === 'web') return { ok: true, externalId: o.messageId };
    if (this.c.dryRun) {
      this.log.info({ message: o.messageId, channel: o.channel }, 'channels dry run: not sent');
      return {
        ok: true,
        externalId: o.channel === 'email' ? emailMessageId(this.c, o.messageId) : `dry_${o.messageId}`,
      };
    }
    const provider = providerFor(this.c, o.channel);
    if (provider === 'smtp') return this.email(o, signal);
    if (o.phone === null) return fail(false, 'NO_ADDRESS', 'the guest has no phone number');
    if (provider === 'twilio') return this.twilio(o, o.phone, signal);
    if (provider === 'meta') return this.meta(o, o.phone, signal);
    return fail(false, 'CHANNEL_NOT_CONFIGURED', `no provider is configured for the ${o.channel} channel`);
  }

  private async email(o: Outgoing, signal: AbortSignal): Promise<SendResult> {
    if (o.email === null) return fail(false, 'NO_ADDRESS', 'the guest has no e-mail address');
    const cfg = this.c.email!;
    const id = emailMessageId(this.c, o.messageId);
    const last = o.references.at(-1);
    let files: NonNullable<SmtpMail['attachments']> = [];
    try {
      files = await Promise.all(
        (o.attachments ?? []).map(async (f) => ({
          filename: f.filename,
          contentType: f.contentType,
          content: await f.open(),
        })),
      );
    } catch (err) {
      // The store did not answer: nothing was sent, so trying again later is safe.
      return fail(true, 'ATTACHMENT_UNREADABLE', (err as Error).message);
    }
    const mail = {
      from: cfg.from,
      to: o.email,
      subject: o.subject,
      text: o.content,
      messageId: id,
      ...(files.length > 0 ? { attachments: files } : {}),
      ...(last ? { inReplyTo: last, references: o.references } : {}),
      // RFC 3834 §5: a response sent automatically says so, so that other responders do not answer it.
      ...(o.automatic ? { headers: { 'Auto-Submitted': 'auto-replied' } } : {}),
    };
    const timeouts = { sendTimeoutMs: this.c.sendTimeoutMs, answerTimeoutMs: this.c.smtpAnswerTimeoutMs };
    const r = await sendSmtp(cfg.smtpUrl, mail, timeouts, signal);
    return r.ok ? { ok: true, externalId: id } : fail(r.retryable, r.code, r.message);
  }

  private async twilio(o: Outgoing, phone: string, signal: AbortSignal): Promise<SendResult> {
    const t = this.c.twilio!;
    const wa = o.channel === 'whatsapp';
    const form = new URLSearchParams({
      To: wa ? `whatsapp:${phone}` : phone,
      From: wa ? `whatsapp:${t.whatsappFrom}` : t.smsFrom!,
      Body: o.content,
      StatusCallback: `${this.c.publicUrl}/api/v1/channels/twilio/status`,
    });
    // Twilio fetches each file from its signed link (MMS, or WhatsApp media).
    for (const f of o.attachments ?? []) form.append('MediaUrl', f.url);
    const auth = Buffer.from(`${t.accountSid}:${t.authToken}`).toString('base64');
    return this.post(`${t.apiUrl}/2010-04-01/Accounts/${encodeURIComponent(t.accountSid)}/Messages.json`, signal, {
      headers: { authorization: `Basic ${auth}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      idOf: (j) => (typeof j.sid === 'string' ? j.sid : null),
      reasonOf: (j) => (typeof j.message === 'string' ? `${j.code ?? ''} ${j.message}`.trim() : null),
    });
  }

  /**
   * Meta takes one file per message: each file goes as its own message with its link, the text as
   * the caption of the first that takes one (audio takes none: the text follows as a text message).
   * The first accepted message's id is the text's externalId; once one is accepted, a later part
   * that fails is logged and the send still counts as sent (a retry would send the first again).
   */
  private async meta(o: Outgoing, phone: string, signal: AbortSignal): Promise<SendResult> {
    const files = o.template === null ? (o.attachments ?? []) : [];
    if (files.length === 0) return this.metaOne(phone, signal, this.metaBody(o));
    let caption: string | null = o.content === '' ? null : o.content;
    const bodies: Record<string, unknown>[] = [];
    for (const f of files) {
      const kind = whatsappKind(f.contentType);
      const media: Record<string, unknown> = { link: f.url };
      if (kind === 'document') media.filename = f.filename;
      if (kind !== 'audio' && caption !== null) {
        media.caption = caption;
        caption = null;
      }
      bodies.push({ type: kind, [kind]: media });
    }
    if (caption !== null) bodies.push({ type: 'text', text: { body: caption, preview_url: false } });
    let first: SendResult | null = null;
    for (const body of bodies) {
      const r = await this.metaOne(phone, signal, body);
      if (first === null) {
        if (!r.ok) return r;
        first = r;
      } else if (!r.ok) {
        this.log.warn({ message: o.messageId, code: r.code }, 'whatsapp: a later part of a message with files failed');
      }
    }
    return first!;
  }

  private metaBody(o: Outgoing): Record<string, unknown> {
    return o.template === null
      ? { type: 'text', text: { body: o.content, preview_url: false } }
      : { type: 'template', template: metaTemplate(o.template) };
  }

  private async metaOne(phone: string, signal: AbortSignal, part: Record<string, unknown>): Promise<SendResult> {
    const w = this.c.whatsapp!;
    return this.post(`${w.apiUrl}/${encodeURIComponent(w.phoneNumberId)}/messages`, signal, {
      headers: { authorization: `Bearer ${w.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: phone.slice(1),
        ...part,
      }),
      idOf: (j) => {
        const m = (j.messages as { id?: unknown }[] | undefined)?.[0];
        return typeof m?.id === 'string' ? m.id : null;
      },
      reasonOf: (j) => {
        const e = j.error as { message?: unknown; code?: unknown } | undefined;
        return typeof e?.message === 'string' ? `${e.code ?? ''} ${e.message}`.trim() : null;
      },
    });
  }

  private async post(
    url: string,
    end: AbortSignal,
    r: {
      headers: Record<string, string>;
      body: string;
      idOf: (j: Record<string, unknown>) => string | null;
      reasonOf: (j: Record<string, unknown>) => string | null;
    },
  ): Promise<SendResult> {
    let res: Response;
    let text = '';
    // One controller, held by the timer and the `end` listener until the attempt ends. Not
    // AbortSignal.any([end, AbortSignal.timeout(…)]): on Node 20 that combined signal is only
    // weakly held (by its sources and by fetch's request), so a garbage collection during the
    // request dropped it, the timeout never reached fetch, and a provider that never answered held
    // the send (and a dispatcher slot) for good.
    const attempt = new AbortController();
    const timer = setTimeout(
      () => attempt.abort(new DOMException(`no answer within ${this.c.sendTimeoutMs} ms`, 'TimeoutError')),
      this.c.sendTimeoutMs,
    );
    const onEnd = () => attempt.abort(end.reason);
    if (end.aborted) onEnd();
    else end.addEventListener('abort', onEnd, { once: true });
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: r.headers,
        body: r.body,
        signal: attempt.signal,
        redirect: 'error',
      });
      // A 2xx is an acceptance however its body ends (cut off, late): the text is not sent again.
      if (res.ok) text = await res.text().catch(() => '');
      else text = await res.text();
    } catch (err) {
      const timeout = (err as Error).name === 'TimeoutError';
      return fail(true, timeout ? 'PROVIDER_TIMEOUT' : 'PROVIDER_UNREACHABLE', (err as Error).message);
    } finally {
      clearTimeout(timer);
      end.removeEventListener('abort', onEnd);
    }
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // A non-JSON answer (a proxy's error page): its status decides.
    }
    // Accepted, with or without an id: retrying a 2xx would send the guest the text again.
    if (res.ok) return { ok: true, externalId: r.idOf(json) };
    const reason = r.reasonOf(json) ?? `HTTP ${res.status}`;
    const retryable = res.status === 429 || res.status >= 500 || res.status === 408;
    return fail(retryable, retryable ? `PROVIDER_${res.status}` : 'PROVIDER_REJECTED', reason);
  }
}
