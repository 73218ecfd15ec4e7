// Owns the links to attachment contents: absolute under PUBLIC_URL, valid about an hour, signed
// with a key derived from the deployment's secret, so a link needs no token and cannot be made
// for another file or a later time.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A link lives at least this long. */
const TTL_SECONDS = 3600;
/**
 * Expiries are rounded up to this step, so the same record read twice within it has the same link
 * (and the same ETag): a link lives between TTL_SECONDS and TTL_SECONDS + STEP_SECONDS.
 */
const STEP_SECONDS = 300;

const keyOf = (secret: string) => createHmac('sha256', secret).update('gma attachment links').digest();

export class LinkSigner {
  private readonly keys: Buffer[];
  constructor(
    /** The service's public base URL, no trailing slash. */
    private readonly base: string,
    secrets: readonly string[],
  ) {
    this.keys = secrets.map(keyOf);
  }

  private sign(key: Buffer, id: string, expires: number): string {
    return createHmac('sha256', key).update(`${id}.${expires}`).digest('base64url');
  }

  /** The link to an attachment's content. */
  url(id: string, nowMs = Date.now()): string {
    const expires = Math.ceil((Math.floor(nowMs / 1000) + TTL_SECONDS) / STEP_SECONDS) * STEP_SECONDS;
    return `${this.base}/api/v1/attachments/${encodeURIComponent(id)}/content?expires=${expires}&signature=${this.sign(this.keys[0]!, id, expires)}`;
  }

  /** Whether a link's expiry and signature hold for `id` now (any current or previous secret signs). */
  verify(id: string, expires: string, signature: string, nowMs = Date.now()): 'ok' | 'expired' | 'bad' {
    if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return 'bad';
    const given = Buffer.from(signature, 'base64url');
    const good = this.keys.some((k) => {
      const want = Buffer.from(this.sign(k, id, Number(expires)), 'base64url');
      return want.length === given.length && timingSafeEqual(want, given);
    });
    if (!good) return 'bad';
    return Number(expires) * 1000 < nowMs ? 'expired' : 'ok';
  }
}
