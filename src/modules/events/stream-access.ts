// Owns checking, for as long as an event stream is open, that its caller still has the access that
// opened it (docs/decisions.md, Connections), and how long a stream may live at most. Each open stream is registered
// with what admitted it: a staff token, or an API key and the stored hash its secret matched (also
// when a stream ticket admitted it: the stream is then watched as the ticket's maker). One timer per
// instance reads the current state of every distinct caller of its open streams in a few batched
// queries of the shared store, and ends the streams of those who lost access since: a key revoked,
// expired, without `events:read` or whose secret was rotated away; a token logged out, refreshed or
// outdated by a password change; a staff member deactivated, removed or given another role. So a
// change made on any instance ends the stream on every instance within one check.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Executor } from '../../db/types.js';
import { type AuthUser, hasScope, type Role, type Scope } from '../../lib/auth.js';
import {
  type KeyAccessRow,
  keyAccessRows,
  revokedAmong,
  type StaffAccessRow,
  staffAccessRows,
} from './access-repository.js';

/** Internal settings (tests shorten them); no environment variable reaches them. */
export interface StreamAccessOptions {
  /** How often the callers of open streams are checked again (default 2 s). */
  accessCheckMs?: number;
  /** The longest an API key's stream stays open (default 24 h); a token's ends when it expires. */
  keyStreamMaxMs?: number;
}

/**
 * Every 2 s: a change is seen by the check after it, which ends the stream well within the 5 s
 * docs/decisions.md promises (Connections). One check serves every stream of the instance, whatever their number.
 */
const CHECK_EVERY_MS = 2_000;
/** A key never expiring would otherwise keep its stream for ever; a token's lasts its own lifetime. */
const KEY_STREAM_MAX_MS = 86_400_000;
/**
 * Access that cannot be confirmed is not assumed: a caller whose streams no check has confirmed for
 * this many check intervals (the store failing or not answering; at the default interval, the 5 s
 * promised) has them ended, and the reconnect goes through the gate. A check that is
 * merely slow, up to about an interval, ends nothing.
 */
const UNCONFIRMED_MAX_CHECKS = 2.5;

/** What admitted a stream: checked again, as the gate would check it, on every pass. */
type Grant =
  | { kind: 'staff'; id: string; jti: string; iat: number; role: Role }
  | { kind: 'api_key'; id: string; secretHash: string };

interface Caller {
  grant: Grant;
  /** The `end` of each of its open streams on this instance. */
  ends: Set<() => void>;
  /** When the check that last confirmed its access started (or when its first stream opened). */
  confirmedAt: number;
}

interface State {
  staff: Map<string, StaffAccessRow>;
  revoked: Set<string>;
  keys: Map<string, KeyAccessRow>;
}

const EVENTS_READ: Scope = 'events:read';

export class StreamAccess {
  /** Open streams by caller: a token (staff id and jti) or a key (id and the hash its secret matched). */
  private readonly callers = new Map<string, Caller>();
  private readonly timer: NodeJS.Timeout;
  private readonly unconfirmedMaxMs: number;
  private readonly keyStreamMaxMs: number;
  private checking = false;

  constructor(
    private readonly db: Executor,
    private readonly log: FastifyBaseLogger,
    o: StreamAccessOptions = {},
  ) {
    const every = o.accessCheckMs ?? CHECK_EVERY_MS;
    this.keyStreamMaxMs = o.keyStreamMaxMs ?? KEY_STREAM_MAX_MS;
    this.unconfirmedMaxMs = UNCONFIRMED_MAX_CHECKS * every;
    this.timer = setInterval(() => this.tick(), every);
    this.timer.unref();
  }

  /** When a stream `user` opens now ends at the latest (ms since the epoch). */
  endsAt(user: AuthUser, now = Date.now()): number {
    const expires = user.exp * 1000;
    return user.kind === 'api_key' ? Math.min(expires, now + this.keyStreamMaxMs) : expires;
  }

  /**
   * Registers a stream of the caller the gate admitted `request` as; `end` is called once the
   * caller has lost access. Returns what unregisters it (when the stream ends, however it ends).
   */
  watch(request: FastifyRequest, end: () => void): () => void {
    const grant = grantOf(request);
    const key =
      grant.kind === 'staff' ? `s\u0000${grant.id}\u0000${grant.jti}` : `k\u0000${grant.id}\u0000${grant.secretHash}`;
    let caller = this.callers.get(key);
    if (caller === undefined) {
      caller = { grant, ends: new Set(), confirmedAt: Date.now() };
      this.callers.set(key, caller);
    }
    const c = caller;
    c.ends.add(end);
    return () => {
      c.ends.delete(end);
      if (c.ends.size === 0 && this.callers.get(key) === c) this.callers.delete(key);
    };
  }

  /** Callers with open streams on this instance. */
  get size(): number {
    return this.callers.size;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    const now = Date.now();
    for (const c of this.callers.values()) {
      if (now - c.confirmedAt > this.unconfirmedMaxMs) endAll(c);
    }
    if (!this.checking && this.callers.size > 0) {
      this.checking = true;
      this.check()
        .catch((err: unknown) => this.log.warn({ err }, 'could not check the access of open event streams'))
        .finally(() => {
          this.checking = false;
        });
    }
  }

  /** Reads every caller's state in a few queries; confirms those still allowed, ends the others. */
  private async check(): Promise<void> {
    const startedAt = Date.now();
    const callers = [...this.callers.values()];
    const staffIds = new Set<string>();
    const jtis: string[] = [];
    const keyIds = new Set<string>();
    for (const { grant } of callers) {
      if (grant.kind === 'staff') {
        staffIds.add(grant.id);
        jtis.push(grant.jti);
      } else {
        keyIds.add(grant.id);
      }
    }
    // One after another: the check is background work and takes one pool connection at a time.
    const state: State = { staff: new Map(), revoked: new Set(), keys: new Map() };
    if (staffIds.size > 0) {
      for (const row of await staffAccessRows(this.db, [...staffIds])) state.staff.set(row.id, row);
      state.revoked = await revokedAmong(this.db, jtis);
    }
    if (keyIds.size > 0) for (const row of await keyAccessRows(this.db, [...keyIds])) state.keys.set(row.id, row);
    const now = Date.now();
    for (const c of callers) {
      if (c.ends.size === 0) continue;
      if (this.allowed(c.grant, state, now)) c.confirmedAt = startedAt;
      else endAll(c);
    }
  }

  /** Whether the grant still admits its caller to the stream, as the gate would admit them now. */
  private allowed(grant: Grant, state: State, now: number): boolean {
    if (grant.kind === 'staff') {
      const row = state.staff.get(grant.id);
      return (
        row !== undefined &&
        Boolean(row.active) &&
        // Another role reaches other events (a staff-role member sees only their own).
        row.role === grant.role &&
        grant.iat >= Number(row.tokens_valid_after) &&
        !state.revoked.has(grant.jti)
      );
    }
    const row = state.keys.get(grant.id);
    if (row === undefined || row.revoked_at !== null) return false;
    if (row.expires_at !== null && new Date(row.expires_at).getTime() <= now) return false;
    if (!hasScope(JSON.parse(row.scopes) as Scope[], EVENTS_READ)) return false;
    // The secret it was opened with: the current one, or the replaced one during its grace period.
    if (grant.secretHash === row.secret_hash) return true;
    return (
      row.previous_hash === grant.secretHash &&
      row.previous_expires_at !== null &&
      new Date(row.previous_expires_at).getTime() > now
    );
  }
}

function endAll(c: Caller): void {
  // Each `end` unregisters itself, changing the set.
  for (const end of [...c.ends]) end();
}

/** What admitted the request: its token's claims, or its key's id and the stored hash its secret matched. */
function grantOf(request: FastifyRequest): Grant {
  const user = request.user!;
  if (user.kind === 'staff') return { kind: 'staff', id: user.id, jti: user.jti, iat: user.iat ?? 0, role: user.role };
  // The gate admits a key only once its secret matched a stored hash, and says which.
  return { kind: 'api_key', id: user.id, secretHash: user.secretHash ?? '' };
}
