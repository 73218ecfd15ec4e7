// Owns WhatsApp's sending rules: free text only within 24 hours of the guest's last WhatsApp
// message (Meta refuses it otherwise, so the API says so at once, not after a failed send), and
// template messages, allowed at any time, rendered from the `whatsapp_templates` setting.
import { toIso } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { conflict, validation } from '../../lib/errors.js';
import { getSetting } from '../settings/repository.js';
import { placeholders, type WhatsAppTemplate } from './templates.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/** When the guest last wrote on WhatsApp (any of their WhatsApp conversations), or null. */
async function lastWhatsAppInbound(db: Executor, guestId: string): Promise<Date | null> {
  const row = await db
    .selectFrom('messages as m')
    .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
    .where('c.guest_id', '=', guestId)
    .where('c.channel', '=', 'whatsapp')
    .where('m.direction', '=', 'inbound')
    .select((eb) => eb.fn.max('m.created_at').as('at'))
    .executeTakeFirst();
  return row?.at == null ? null : new Date(toIso(row.at as string | Date));
}

/** Throws 409 CONFLICT when free text may not go to this guest on WhatsApp now. */
export async function assertWhatsAppWindow(db: Executor, guestId: string, now = new Date()): Promise<void> {
  const last = await lastWhatsAppInbound(db, guestId);
  if (last !== null && now.getTime() - last.getTime() < WINDOW_MS) return;
  throw conflict(
    last === null
      ? 'WhatsApp 24-hour window: this guest has never written on WhatsApp, so only a template message can be sent'
      : `WhatsApp 24-hour window: the guest last wrote at ${last.toISOString()}, more than 24 hours ago; ` +
          'send a template message (type: template) instead',
    { window: 'whatsapp_24h', lastInboundAt: last?.toISOString() ?? null },
  );
}

export interface TemplateRequest {
  name: string;
  language: string;
  parameters?: string[];
}

/** What a template message sends: Meta gets the template by name, Twilio (and the record) the text. */
export interface RenderedTemplate {
  name: string;
  language: string;
  parameters: string[];
  content: string;
}

/**
 * The template named by the request, from the `whatsapp_templates` setting, with its parameters
 * filled in; VALIDATION_ERROR for an unknown name and language or a wrong number of parameters.
 */
export async function renderTemplate(db: Executor, t: TemplateRequest): Promise<RenderedTemplate> {
  const list = ((await getSetting(db, 'whatsapp_templates'))?.value ?? []) as WhatsAppTemplate[];
  const found = list.find((x) => x.name === t.name && x.language === t.language);
  if (found === undefined) {
    const languages = list.filter((x) => x.name === t.name).map((x) => x.language);
    throw validation([
      languages.length > 0
        ? { field: 'template.language', message: `"${t.name}" exists in ${languages.join(', ')} only` }
        : { field: 'template.name', message: 'must name an entry of the whatsapp_templates setting' },
    ]);
  }
  const params = t.parameters ?? [];
  const needed = placeholders(found.body).length;
  if (params.length !== needed) {
    throw validation([
      {
        field: 'template.parameters',
        message: `must hold ${needed} value${needed === 1 ? '' : 's'}, one per placeholder`,
      },
    ]);
  }
  const content = found.body.replace(/\{\{(\d+)\}\}/g, (_m, n: string) => params[Number(n) - 1] ?? '');
  if (content.length > 4096) {
    throw validation([{ field: 'template.parameters', message: 'make the message longer than 4096 characters' }]);
  }
  return { name: found.name, language: found.language, parameters: params, content };
}
