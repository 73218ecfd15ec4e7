// Owns access tokens: HS256 JWTs signed and verified over node:crypto with the algorithm pinned.
// A general JOSE library does far more per verify than this path, whose cost is the HMAC set-up;
// a token seen before costs a map lookup (a bounded cache of verified tokens). It accepts exactly one
// shape: header {alg:"HS256", typ?:"JWT", kid}, claims sub, role, jti, iat, exp, iss, aud.
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

import type { Role } from './auth.js';

export type { Role } from './auth.js';

export interface TokenClaims {
  sub: string;
  role: Role;
  jti: string;
  iat: number;
  exp: number;
  iss: string;
  aud: string;
}

export type VerifyResult =
  | { ok: true; claims: TokenClaims }
  | { ok: false; reason: 'invalid' | 'expired'; message: string };

export const ISSUER = 'guest-messaging-api';
export const AUDIENCE = 'guest-messaging-api';
const ROLES: ReadonlySet<string> = new Set(['admin', 'manager', 'staff']);

interface Key {
  kid: string;
  secret: Buffer;
}

const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');
const kidOf = (secret: string) => createHash('sha256').update(secret).digest('hex').slice(0, 16);

/** Tokens remembered as verified; past this the oldest is forgotten (and verified again if seen). */
const VERIFIED_CACHE_SIZE = 10_000;

export class TokenService {
  private readonly signing: Key;
  private readonly keys: Map<string, Key>;
  /**
   * Tokens whose signature and claims were verified, by their exact text. Creating the HMAC is
   * the dearest step of a request's authentication (OpenSSL 3 sets up the key each time), and an integration
   * sends the same token for hours. A token is only ever added after passing every check, expiry
   * is checked again on each use, and revocation and the staff row are read from the store on
   * every request (the gate plugin), so a cached token honours both at once.
   */
  private readonly verified = new Map<string, Readonly<TokenClaims>>();

  constructor(
    secret: string,
    previous: readonly string[],
    private readonly ttlSeconds: number,
  ) {
    this.signing = { kid: kidOf(secret), secret: Buffer.from(secret) };
    this.keys = new Map([[this.signing.kid, this.signing]]);
    for (const s of previous) this.keys.set(kidOf(s), { kid: kidOf(s), secret: Buffer.from(s) });
  }

  sign(sub: string, role: Role, nowMs = Date.now()): { token: string; claims: TokenClaims } {
    const iat = Math.floor(nowMs / 1000);
    const claims: TokenClaims = {
      sub,
      role,
      jti: randomUUID(),
      iat,
      exp: iat + this.ttlSeconds,
      iss: ISSUER,
      aud: AUDIENCE,
    };
    const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: this.signing.kid }));
    const body = b64url(JSON.stringify(claims));
    const sig = createHmac('sha256', this.signing.secret).update(`${head}.${body}`).digest('base64url');
    return { token: `${head}.${body}.${sig}`, claims };
  }

  verify(token: string, nowMs = Date.now()): VerifyResult {
    const known = this.verified.get(token);
    if (known !== undefined) {
      if (known.exp * 1000 > nowMs) return { ok: true, claims: known };
      this.verified.delete(token);
      return expired();
    }
    const result = this.verifyFully(token, nowMs);
    if (result.ok) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) {
        // A Map iterates in insertion order: the first key is the oldest.
        this.verified.delete(this.verified.keys().next().value as string);
      }
      this.verified.set(token, Object.freeze(result.claims));
    }
    return result;
  }

  private verifyFully(token: string, nowMs: number): VerifyResult {
    const parts = token.split('.');
    if (parts.length !== 3) return invalid('Token is malformed');
    const [head, body, sig] = parts as [string, string, string];
    const header = parseSegment(head);
    if (header === null) return invalid('Token header is malformed');
    if (header.alg !== 'HS256') return invalid('Token algorithm is not accepted');
    if (header.typ !== undefined && header.typ !== 'JWT') return invalid('Token type is not accepted');
    if (typeof header.kid !== 'string') return invalid('Token has no key id');
    if (header.crit !== undefined) return invalid('Token has critical headers');
    const key = this.keys.get(header.kid);
    // A key this server does not have: most often the secret changed (a restart without JWT_SECRET
    // before it was kept, a rotation that dropped it from JWT_SECRET_PREVIOUS). Say what to do.
    if (key === undefined) return invalid('This token was signed by a key this server no longer has: log in again');

    // Compare the signature as text, not as decoded bytes: base64url decoding ignores the unused
    // low bits of the last character, so a byte comparison would accept several spellings of one
    // signature (malleable tokens).
    const expected = Buffer.from(createHmac('sha256', key.secret).update(`${head}.${body}`).digest('base64url'));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return invalid('Token signature is invalid');
    }
    const c = parseSegment(body);
    if (c === null) return invalid('Token claims are malformed');
    if (typeof c.sub !== 'string' || c.sub === '') return invalid('Token has no subject');
    if (typeof c.jti !== 'string' || c.jti === '') return invalid('Token has no id');
    if (typeof c.exp !== 'number' || !Number.isFinite(c.exp)) return invalid('Token has no expiry');
    if (typeof c.iat !== 'number' || !Number.isFinite(c.iat)) return invalid('Token has no issue time');
    if (typeof c.role !== 'string' || !ROLES.has(c.role)) return invalid('Token role is invalid');
    if (c.iss !== ISSUER || c.aud !== AUDIENCE) return invalid('Token issuer or audience is wrong');
    if (c.exp * 1000 <= nowMs) return expired();
    return { ok: true, claims: c as unknown as TokenClaims };
  }
}

function expired(): VerifyResult {
  return { ok: false, reason: 'expired', message: 'Token has expired; log in again' };
}

function invalid(message: string): VerifyResult {
  return { ok: false, reason: 'invalid', message };
}

function parseSegment(seg: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]+$/.test(seg)) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
