// Owns the audit log's schemas: an entry as answered, its actions and the list's filters.
import { type Static, Type } from 'typebox';
import { Nullable, PageQuery, RecordId } from '../../lib/schemas.js';

export const AUDIT_ACTIONS = [
  'auth.login',
  'auth.login_failed',
  'auth.logout',
  'auth.password_changed',
  'staff.created',
  'staff.updated',
  'settings.updated',
  'api_key.created',
  'api_key.updated',
  'api_key.rotated',
  'api_key.revoked',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'guest.exported',
  'guest.erased',
  'access.denied',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

const DateTime = Type.String({ format: 'date-time', maxLength: 30 });
const Ref = (description: string) =>
  Nullable(
    Type.Object(
      {
        type: Type.String({
          maxLength: 32,
          pattern: '^[a-z_]+$',
          'x-pattern-message': 'must be lowercase letters and _',
        }),
        id: Nullable(Type.String({ maxLength: 320 })),
      },
      { description },
    ),
  );

export const AuditEntry = Type.Object(
  {
    id: RecordId('aud'),
    action: Type.Enum([...AUDIT_ACTIONS]),
    actor: Ref('Who acted: { type: staff | api_key, id }; null when unknown (a failed login)'),
    target: Ref(
      'What was acted on: staff, setting (id = key), api_key, webhook, guest (an export or an erase), email (a failed login), route (a refusal)',
    ),
    ip: Nullable(Type.String({ maxLength: 64 })),
    userAgent: Nullable(Type.String({ maxLength: 512 })),
    requestId: Nullable(Type.String({ maxLength: 128 })),
    createdAt: DateTime,
  },
  { $id: 'AuditEntry' },
);
export type AuditEntryView = Static<typeof AuditEntry>;

export const ListAuditQuery = Type.Object(
  {
    ...PageQuery,
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Actor id (staff or API key)' })),
    action: Type.Optional(Type.Enum([...AUDIT_ACTIONS])),
    from: Type.Optional(Type.String({ ...DateTime, description: 'Entries at or after this time' })),
    to: Type.Optional(Type.String({ ...DateTime, description: 'Entries before this time' })),
  },
  { additionalProperties: false },
);
