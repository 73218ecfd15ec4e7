// Owns reading what Meta and Twilio post into the API's terms: Meta's webhook entries (guest
// messages and delivery statuses) for our number only, and Twilio's status names (inbound e-mail:
// email-read.ts). Read field by field: whatever is missing or of another shape is skipped, never an
// error the provider would retry forever.

import type { InboundFile } from '../attachments/inbound.js';
import type { StatusChange } from './delivery.js';
import { contentOf, type Inbound } from './inbound.js';

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
        const files = whatsappMedia(m ?? {});
        out.messages.push({
          channel: 'whatsapp',
          sender: { phone: `+${from}`, name: names.get(from) ?? null },
          content: contentOf(content, '[empty message]'),
          providerId: id,
          ...(files.length > 0 ? { files } : {}),
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

const WHATSAPP_MEDIA = new Set(['image', 'document', 'audio', 'video', 'sticker']);

/** The file of a WhatsApp media message: its media id, resolved and downloaded after commit. */
function whatsappMedia(m: Record<string, unknown>): InboundFile[] {
  const type = str(m.type) ?? '';
  const part = obj(m[type]);
  const mediaId = str(part?.id);
  if (!WHATSAPP_MEDIA.has(type) || mediaId === undefined) return [];
  return [
    { kind: 'whatsapp', mediaId, contentType: str(part?.mime_type) ?? null, filename: str(part?.filename) ?? null },
  ];
}

/** Twilio's media of an inbound message: `MediaUrl{n}` and `MediaContentType{n}` for n < NumMedia (at most 10). */
export function twilioMedia(form: Record<string, unknown>): InboundFile[] {
  const n = Math.min(10, Math.max(0, Math.floor(Number(form.NumMedia ?? 0)) || 0));
  const out: InboundFile[] = [];
  for (let i = 0; i < n; i++) {
    const url = str(form[`MediaUrl${i}`]);
    if (url === undefined || !/^https?:\/\//.test(url)) continue;
    out.push({ kind: 'twilio', url, contentType: str(form[`MediaContentType${i}`]) ?? null });
  }
  return out;
}
