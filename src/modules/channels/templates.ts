// Owns what a WhatsApp template is (the entries of the `whatsapp_templates` setting) and the rules
// its body obeys. Pure, so the settings registry checks a new value with the same rules the
// channel renders by (rules.ts) without the two importing each other.
import type { FieldError } from '../../lib/errors.js';

export interface WhatsAppTemplate {
  name: string;
  language: string;
  body: string;
}

/** The distinct placeholder numbers a body uses ({{1}}, {{2}} …). */
export function placeholders(body: string): number[] {
  return [...new Set([...body.matchAll(/\{\{(\d+)\}\}/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
}

/** Problems of a `whatsapp_templates` value JSON Schema cannot express. */
export function templateProblems(list: WhatsAppTemplate[]): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  list.forEach((t, i) => {
    const key = `${t.name}\u0000${t.language}`;
    if (seen.has(key)) out.push({ field: `value.${i}`, message: `"${t.name}" in ${t.language} is listed twice` });
    seen.add(key);
    const nums = placeholders(t.body);
    if (nums.some((n, j) => n !== j + 1)) {
      out.push({ field: `value.${i}.body`, message: 'placeholders must be numbered {{1}}, {{2}} … without gaps' });
    }
  });
  return out;
}
