// Owns how a request's audit entries are made: who acted (the caller, a staff member or an API key),
// from where (IP, user agent) and under which request id. A service that changes something records
// its entry through an AuditTrail inside the transaction of that change (docs/decisions.md, Integration safety), so the entry
// commits with the change and only with it: a rolled-back change leaves none, an idempotent replay
// (which runs no handler) adds none. Entries with no change of their own (a failed login, a 403) are
// written by src/plugins/audit.ts.
import type { FastifyRequest } from 'fastify';
import type { Executor } from '../../db/types.js';
import { appendAudit, type NewAuditEntry, type Ref } from './repository.js';
import type { AuditAction } from './schemas.js';

/** What a service needs to audit its change. */
export interface AuditTrail {
  /** Appends the entry for `action` on `target` in `tx`, the transaction of the change it records. */
  record(tx: Executor, action: AuditAction, target: Ref | null): Promise<void>;
}

/** A reference to a record of `type`; an id that is not a string (unknown) is null. */
export const ref = (type: string, id: unknown): Ref => ({ type, id: typeof id === 'string' ? id : null });

/** The caller of a request as an audit actor, or null before authentication. */
export function actorOf(request: FastifyRequest): Ref | null {
  const user = request.user ?? null;
  return user === null ? null : ref(user.kind === 'api_key' ? 'api_key' : 'staff', user.id);
}

/** An entry of `request`: its IP, user agent and request id; the actor is its caller unless given. */
export function entryOf(
  request: FastifyRequest,
  action: AuditAction,
  target: Ref | null,
  actor: Ref | null = actorOf(request),
): NewAuditEntry {
  const agent = request.headers['user-agent'];
  return {
    action,
    actor,
    target,
    ip: request.ip ?? null,
    userAgent: typeof agent === 'string' ? agent : null,
    requestId: request.id,
  };
}

/** The audit trail of a request: entries name its caller as the actor. */
export const auditTrail = (request: FastifyRequest): AuditTrail => ({
  record: (tx, action, target) => appendAudit(tx, entryOf(request, action, target)),
});
