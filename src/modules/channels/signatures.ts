// Owns proving that a provider's request is the provider's: Twilio's X-Twilio-Signature, Meta's
// X-Hub-Signature-256, the HTTP Basic password of inbound e-mail and Meta's verify token. Every
// comparison is constant time, and a provider that is not configured proves nothing, so its routes
// refuse everything.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * Constant-time string equality: the SHA-256 digests are compared, always of equal length, so the
 * time taken tells neither how much of a guess was right nor how long the secret is.
 */
export function same(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** A form body as Twilio sends it: every name with its values, in the order received. */
export type FormParams = Map<string, string[]>;

export function parseForm(body: string): FormParams {
  const out: FormParams = new Map();
  for (const [k, v] of new URLSearchParams(body)) {
    const list = out.get(k);
    if (list) list.push(v);
    else out.set(k, [v]);
  }
  return out;
}

/**
 * Twilio's signature of a request: base64 HMAC-SHA1, keyed with the auth token, of the full URL
 * Twilio called followed by each form parameter's name and value, sorted by name (a repeated name
 * contributes each of its values, sorted).
 */
export function twilioSignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of [...params.keys()].sort()) {
    for (const value of [...params.get(name)!].sort()) data += name + value;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

export function twilioSignatureValid(
  authToken: string,
  url: string,
  params: FormParams,
  header: string | undefined,
): boolean {
  return header !== undefined && same(header, twilioSignature(authToken, url, params));
}

/** Meta's X-Hub-Signature-256: `sha256=` and the hex HMAC-SHA256 of the raw body with the app secret. */
export function metaSignature(appSecret: string, rawBody: Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`;
}

export function metaSignatureValid(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  return header !== undefined && same(header.toLowerCase(), metaSignature(appSecret, rawBody));
}

/** Whether an Authorization header is HTTP Basic with this password (any user name). */
export function basicPasswordValid(secret: string, header: string | undefined): boolean {
  const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? '');
  if (m === null) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 && same(decoded.slice(colon + 1), secret);
}
