// Owns the API key credential: its text (`gma_<id>_<secret>`, the secret 32 random bytes), parsing
// it back, and the keyed hash that is all the store keeps of the secret. A key's secret has 256
// bits of entropy, so a fast keyed hash (HMAC-SHA256 with a server-side pepper) is enough: a slow
// password hash would only cost every request time without making a guess any likelier.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY = /^gma_(key_[0-9a-hjkmnp-tv-z]{26})_([A-Za-z0-9_-]{43})$/;

/** Whether a bearer credential is shaped as an API key rather than a JWT. */
export const looksLikeKey = (credential: string): boolean => credential.startsWith('gma_');

/** A new secret and the key text a client sends. */
export function newSecret(id: string): { secret: string; key: string } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, key: `gma_${id}_${secret}` };
}

/** The id and secret of a key's text, or null when it is not one. */
export function parseKey(text: string): { id: string; secret: string } | null {
  const m = KEY.exec(text);
  return m === null ? null : { id: m[1]!, secret: m[2]! };
}

/**
 * Hashes secrets with the first pepper and checks them against every pepper (the previous ones
 * still verify while a rotated JWT_SECRET is listed in JWT_SECRET_PREVIOUS).
 */
export class SecretHasher {
  private readonly peppers: Buffer[];
  constructor(peppers: readonly Buffer[]) {
    if (peppers.length === 0) throw new Error('SecretHasher needs a pepper');
    this.peppers = [...peppers];
  }

  /**
   * The peppers from config: API_KEY_PEPPER when set, else one derived from each JWT secret, so
   * keys survive a JWT_SECRET rotation while the old secret is still listed as previous.
   */
  static fromSecrets(pepper: string | null, jwtSecrets: readonly string[]): SecretHasher {
    const derive = (s: string) => createHmac('sha256', s).update('gma api key pepper v1').digest();
    return new SecretHasher(pepper !== null ? [Buffer.from(pepper)] : jwtSecrets.map(derive));
  }

  hash(secret: string): string {
    return this.hashWith(this.peppers[0]!, secret);
  }

  /** Whether `secret` hashes to `stored` under any pepper (constant time per comparison). */
  matches(secret: string, stored: string): boolean {
    const want = Buffer.from(stored);
    for (const pepper of this.peppers) {
      const got = Buffer.from(this.hashWith(pepper, secret));
      if (got.length === want.length && timingSafeEqual(got, want)) return true;
    }
    return false;
  }

  private hashWith(pepper: Buffer, secret: string): string {
    return createHmac('sha256', pepper).update(secret).digest('base64url');
  }
}
