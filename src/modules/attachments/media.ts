// Owns which files the API takes and what they are: the type is sniffed from the bytes (file-type
// for binary formats, a check of our own for plain text), a declared type only ever confirms it,
// and whether a browser may show the file inline. Pure functions, no I/O (docs/attachments.md).
import { fileTypeFromBuffer } from 'file-type';

/** Bytes read from the start of a file before its type is decided (file-type reads at most this). */
export const HEAD_BYTES = 4100;

/** The sniffed type of each accepted format, as the record states it. */
const SNIFFED: Record<string, string> = {
  'image/jpeg': 'image/jpeg',
  'image/png': 'image/png',
  'image/webp': 'image/webp',
  'image/gif': 'image/gif',
  'image/heic': 'image/heic',
  'image/heif': 'image/heic',
  'application/pdf': 'application/pdf',
  'audio/ogg; codecs=opus': 'audio/ogg',
  'audio/ogg': 'audio/ogg',
  'audio/opus': 'audio/ogg',
  'audio/mpeg': 'audio/mpeg',
  'audio/mp4': 'audio/mp4',
  'audio/x-m4a': 'audio/mp4',
  'audio/aac': 'audio/aac',
  'audio/amr': 'audio/amr',
  'video/mp4': 'video/mp4',
  'video/3gpp': 'video/3gpp',
};

/** Declared names of the same formats: aliases clients and providers send. */
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/heif': 'image/heic',
  'audio/mp3': 'audio/mpeg',
  'audio/mpeg3': 'audio/mpeg',
  'audio/x-mp3': 'audio/mpeg',
  'audio/x-mpeg': 'audio/mpeg',
  'audio/opus': 'audio/ogg',
  'audio/x-m4a': 'audio/mp4',
  'audio/m4a': 'audio/mp4',
  'audio/x-aac': 'audio/aac',
  'audio/3gpp': 'video/3gpp',
  'application/x-pdf': 'application/pdf',
};

/**
 * One container holds sound or pictures: a voice note in MP4 sniffs as video/mp4, so a declared
 * audio/mp4 confirms it (and is kept: a provider sends it as audio).
 */
const FAMILY: Record<string, string> = { 'audio/mp4': 'mp4', 'video/mp4': 'mp4', 'video/3gpp': '3gp' };

export const ACCEPTED_TYPES = [...new Set([...Object.values(SNIFFED), 'text/plain'])];

/** A declared Content-Type in our terms: lower case, no parameters, aliases resolved; null when it says nothing. */
export function declaredType(raw: string | null | undefined): string | null {
  const base = (raw ?? '').split(';')[0]!.trim().toLowerCase();
  if (base === '' || base === 'application/octet-stream' || base === 'binary/octet-stream') return null;
  return ALIASES[base] ?? base;
}

/** Whether a browser may show the type inline: images, pdf, audio and video; never text. */
export function inline(contentType: string): boolean {
  return /^(image|audio|video)\//.test(contentType) || contentType === 'application/pdf';
}

/** What a WhatsApp or similar provider calls a file of this type. */
export function mediaKind(contentType: string): 'image' | 'audio' | 'video' | 'document' {
  if (contentType.startsWith('image/')) return 'image';
  if (contentType.startsWith('audio/')) return 'audio';
  if (contentType.startsWith('video/')) return 'video';
  return 'document';
}

/**
 * Plain text as we keep it, watched as it streams past: valid UTF-8 without NUL. Whether it is
 * markup is judged on its start (looksLikeMarkup), as a browser's sniffer does.
 */
export class TextCheck {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  ok = true;
  push(chunk: Uint8Array): void {
    if (!this.ok) return;
    if (chunk.includes(0)) {
      this.ok = false;
      return;
    }
    try {
      this.decoder.decode(chunk, { stream: true });
    } catch {
      this.ok = false;
    }
  }
  end(): boolean {
    if (!this.ok) return false;
    try {
      this.decoder.decode();
    } catch {
      this.ok = false;
    }
    return this.ok;
  }
}

/**
 * Whether text begins like HTML, XML or SVG to a browser's sniffer (WHATWG MIME Sniffing §7.1): a
 * tag it knows, a comment, a doctype or an XML declaration after leading whitespace (and a BOM).
 */
export function looksLikeMarkup(head: Uint8Array): boolean {
  const text = Buffer.from(head)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
    .toLowerCase();
  return /^<(!doctype\s+html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|svg|\?xml|!--)([\s>/]|$)/.test(
    text,
  );
}

export type Verdict =
  | { ok: true; contentType: string }
  | { ok: false; code: 'UNSUPPORTED_MEDIA_TYPE'; message: string };

const refuse = (message: string): Verdict => ({ ok: false, code: 'UNSUPPORTED_MEDIA_TYPE', message });

/**
 * The type of a file from its first bytes (`head`) and whether the whole was plain text, held
 * against what the sender declared: a type we do not take, or one the bytes contradict, is refused.
 */
export async function judge(head: Uint8Array, isText: boolean, declared: string | null): Promise<Verdict> {
  const found = head.length === 0 ? undefined : await fileTypeFromBuffer(head);
  let sniffed: string | undefined;
  if (found !== undefined) {
    sniffed = SNIFFED[found.mime];
    if (sniffed === undefined) return refuse(`files of type ${found.mime} are not accepted`);
  } else if (isText && head.length > 0) {
    if (looksLikeMarkup(head)) return refuse('markup (HTML, XML or SVG) is not accepted');
    sniffed = 'text/plain';
  } else {
    return refuse(`the file is of a type that is not accepted (accepted: ${ACCEPTED_TYPES.join(', ')})`);
  }
  if (declared === null || declared === sniffed) return { ok: true, contentType: sniffed };
  const family = FAMILY[sniffed];
  if (family !== undefined && FAMILY[declared] === family) return { ok: true, contentType: declared };
  return refuse(`the file was declared as ${declared} but its content is ${sniffed}`);
}

/**
 * A filename safe to store and show: the last path segment only, without control characters,
 * quotes, backslashes or leading dots, at most 200 characters; `fallback` when nothing is left.
 */
export function cleanFilename(raw: string | null | undefined, fallback: string): string {
  const last = (raw ?? '').split(/[/\\]/).pop() ?? '';
  const cleaned = last
    .normalize('NFC')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point.
    .replace(/[\u0000-\u001f\u007f-\u009f"<>|:*?]/g, '')
    .replace(/^[.\s]+/, '')
    .trim();
  const short = [...cleaned].slice(0, 200).join('');
  return short === '' ? fallback : short;
}

/** A default filename for a file of this type, when its sender gave none. */
export function defaultFilename(contentType: string, id: string): string {
  const ext: Record<string, string> = {
    'image/jpeg': 'jpg',
    'image/png': 'png',
    'image/webp': 'webp',
    'image/gif': 'gif',
    'image/heic': 'heic',
    'application/pdf': 'pdf',
    'audio/ogg': 'ogg',
    'audio/mpeg': 'mp3',
    'audio/mp4': 'm4a',
    'audio/aac': 'aac',
    'audio/amr': 'amr',
    'video/mp4': 'mp4',
    'video/3gpp': '3gp',
    'text/plain': 'txt',
  };
  return `${id}.${ext[contentType] ?? 'bin'}`;
}
