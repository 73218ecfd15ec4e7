// Owns event stream tickets (docs/events.md, "From a browser"): a browser's EventSource cannot send an Authorization
// header, so a caller with `events:read` makes a ticket (POST /events/stream-tickets) and the page
// opens GET /events/stream?ticket=… with it. A ticket is 256 random bits, opens one stream, lapses
// after 60 s (or when the credential that made it does, if sooner), and carries what admitted its
// maker: the gate admits its stream only as that caller, with the access they hold now
// (src/plugins/gate.ts). Tickets are rows of the shared store, kept under their SHA-256: the store is
// what every instance of a deployment always shares (Redis is optional, also with several
// instances), and one DELETE … RETURNING makes a use atomic on both stores, so of two uses racing,
// on one instance or two, exactly one opens a stream. Making a ticket is rare next to requests (one
// per stream opened), so its write costs the hot paths nothing.
import { createHash, randomBytes } from 'node:crypto';
import { toIso } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import type { AuthUser } from '../../lib/auth.js';
import { authError } from '../../lib/errors.js';
import { insertTicket, purgeTickets, takeTicket } from './ticket-repository.js';

/** Internal settings (tests shorten them); no environment variable reaches them. */
export interface StreamTicketOptions {
  /** How long a ticket may wait for its use (default 60 s). */
  ticketTtlMs?: number;
}

const TICKET_TTL_MS = 60_000;
/** `gmt_` and 32 random bytes in base64url: a prefix secret scanners can match. */
export const TICKET_PATTERN = '^gmt_[A-Za-z0-9_-]{43}$';
const TICKET = new RegExp(TICKET_PATTERN);

/** What admitted the caller who made a ticket; the gate checks it again when the ticket is used. */
export type TicketGrant =
  | { kind: 'staff'; id: string; jti: string; iat: number; exp: number }
  | { kind: 'api_key'; id: string; secretHash: string };

export interface IssuedTicket {
  ticket: string;
  expiresAt: string;
}

const digest = (ticket: string) => createHash('sha256').update(ticket).digest('hex');
const invalid = (message: string) => authError('TOKEN_INVALID', message, true);
const MAKE_ANOTHER = 'make a new one with POST /events/stream-tickets for each connection';

export class StreamTickets {
  readonly ttlMs: number;

  constructor(
    private readonly db: Executor,
    o: StreamTicketOptions = {},
  ) {
    this.ttlMs = o.ticketTtlMs ?? TICKET_TTL_MS;
  }

  /** A new ticket for the caller the gate admitted as `user`. */
  async issue(user: AuthUser, now = Date.now()): Promise<IssuedTicket> {
    const ticket = `gmt_${randomBytes(32).toString('base64url')}`;
    // Never outliving the token or key that made it.
    const expiresAt = new Date(Math.min(now + this.ttlMs, user.exp * 1000)).toISOString();
    const row = { hash: digest(ticket), caller_id: user.id, expires_at: expiresAt };
    if (user.kind === 'staff') {
      await insertTicket(this.db, {
        ...row,
        caller_kind: 'staff',
        jti: user.jti,
        issued_at: user.iat ?? 0,
        token_expires_at: user.exp,
        secret_hash: null,
      });
    } else {
      // The gate admits a key only once its secret matched a stored hash, and says which.
      if (user.secretHash === undefined) throw new Error('an API key caller without the hash it matched');
      await insertTicket(this.db, {
        ...row,
        caller_kind: 'api_key',
        jti: null,
        issued_at: null,
        token_expires_at: null,
        secret_hash: user.secretHash,
      });
    }
    return { ticket, expiresAt };
  }

  /**
   * Uses a ticket: what admitted its maker, once; throws TOKEN_INVALID when it is malformed,
   * unknown, already used or expired. The caller's access is the gate's to check.
   */
  async redeem(ticket: string, now = Date.now()): Promise<TicketGrant> {
    if (!TICKET.test(ticket)) {
      throw invalid('The stream ticket is malformed: pass the `ticket` POST /events/stream-tickets answered');
    }
    const row = await takeTicket(this.db, digest(ticket));
    if (row === undefined) throw invalid(`The stream ticket is unknown or already used: ${MAKE_ANOTHER}`);
    if (Date.parse(toIso(row.expires_at)) <= now) throw invalid(`The stream ticket has expired: ${MAKE_ANOTHER}`);
    if (row.caller_kind === 'api_key') return { kind: 'api_key', id: row.caller_id, secretHash: row.secret_hash ?? '' };
    return {
      kind: 'staff',
      id: row.caller_id,
      jti: row.jti ?? '',
      iat: Number(row.issued_at),
      exp: Number(row.token_expires_at),
    };
  }

  /** Deletes tickets that expired unused; returns how many. */
  purge(now = Date.now()): Promise<number> {
    return purgeTickets(this.db, new Date(now));
  }
}
