// Owns audit log rows: appending an entry, the filtered list (newest first), the retention purge,
// and the mapping of a row to its API shape. There is no update: entries are never edited.
import { paginate } from '../../db/paginate.js';
import { nowIso, toIso } from '../../db/store.js';
import type { AuditRow, Executor } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { AuditAction, AuditEntryView } from './schemas.js';

export interface Ref {
  type: string;
  id: string | null;
}

export interface NewAuditEntry {
  action: AuditAction;
  actor: Ref | null;
  target: Ref | null;
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
}

const COLUMNS = [
  'id',
  'action',
  'actor_type',
  'actor_id',
  'target_type',
  'target_id',
  'ip',
  'user_agent',
  'request_id',
  'created_at',
] as const;

const refOf = (type: string | null, id: string | null): Ref | null => (type === null ? null : { type, id });

export function toAuditEntry(row: AuditRow): AuditEntryView {
  return {
    id: row.id,
    action: row.action as AuditAction,
    actor: refOf(row.actor_type, row.actor_id),
    target: refOf(row.target_type, row.target_id),
    ip: row.ip,
    userAgent: row.user_agent,
    requestId: row.request_id,
    createdAt: toIso(row.created_at),
  };
}

export async function appendAudit(x: Executor, e: NewAuditEntry): Promise<void> {
  await x
    .insertInto('audit_log')
    .values({
      id: newId('aud'),
      action: e.action,
      actor_type: e.actor?.type ?? null,
      actor_id: e.actor?.id ?? null,
      target_type: e.target?.type ?? null,
      target_id: e.target?.id ?? null,
      ip: e.ip,
      user_agent: e.userAgent === null ? null : e.userAgent.slice(0, 512),
      request_id: e.requestId,
      created_at: nowIso(),
    })
    .execute();
}

/** Deletes entries older than `days`. */
export async function purgeAudit(x: Executor, days: number): Promise<void> {
  const before = new Date(Date.now() - days * 86400_000).toISOString();
  await x.deleteFrom('audit_log').where('created_at', '<', before).execute();
}

export interface AuditFilter {
  actor?: string;
  action?: AuditAction;
  from?: string;
  to?: string;
}

/** The entries a filter selects, newest first. */
export const listAudit = paginate<AuditFilter, AuditRow>({
  name: 'audit-log',
  from: (db) => db.selectFrom('audit_log'),
  where(q, f, p) {
    if (f.actor !== undefined) q = q.where('actor_id', '=', p('actor'));
    if (f.action !== undefined) q = q.where('action', '=', p('action'));
    if (f.from !== undefined) q = q.where('created_at', '>=', p('from'));
    if (f.to !== undefined) q = q.where('created_at', '<', p('to'));
    return q;
  },
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  count(x, f, p) {
    let q = x.selectFrom('audit_log').select((eb) => eb.fn.countAll<number>().as('n'));
    if (f.actor !== undefined) q = q.where('actor_id', '=', p('actor'));
    if (f.action !== undefined) q = q.where('action', '=', p('action'));
    if (f.from !== undefined) q = q.where('created_at', '>=', p('from'));
    if (f.to !== undefined) q = q.where('created_at', '<', p('to'));
    return q;
  },
  shapeOf: (f) =>
    ['actor', 'action', 'from', 'to'].map((k) => (f[k as keyof AuditFilter] === undefined ? 0 : 1)).join(''),
  values: (f) => ({ actor: f.actor, action: f.action, from: f.from, to: f.to }),
});
