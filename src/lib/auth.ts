// Owns the types of who is calling and what a route lets them do: the roles, the authenticated
// caller a request carries, and a route's declared access and rate-limit bucket. The gate
// plugin (gate.ts) enforces them; services and lib code only read them.

export type Role = 'admin' | 'manager' | 'staff';

/** Who may call a route: anyone, or callers holding one of these roles. */
export type Access = 'public' | readonly Role[];
/** Resources an API key may be scoped to read or write (docs/integrations.md, API keys). */
export const SCOPED_RESOURCES = [
  'conversations',
  'guests',
  'tasks',
  'knowledge',
  'staff',
  'settings',
  'webhooks',
  'stays',
] as const;

/** What an API key may do: `<resource>:read|write`, reading events and reports, posting inbound messages. */
export const SCOPES = [
  ...SCOPED_RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`] as const),
  'events:read',
  'reports:read',
  'channels:inbound',
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Whether `held` scopes allow `needed`: the scope itself, or `<resource>:write` for
 * `<resource>:read` (a key that may change a record may read it).
 */
export function hasScope(held: readonly Scope[], needed: Scope): boolean {
  if (held.includes(needed)) return true;
  return needed.endsWith(':read') && held.includes(needed.replace(/:read$/, ':write') as Scope);
}

/** The rate-limit bucket a route counts in. */
export type Bucket = 'standard' | 'bulk' | 'channels';

export const ANY_ROLE: readonly Role[] = ['admin', 'manager', 'staff'];
export const ADMIN: readonly Role[] = ['admin'];
export const ADMIN_MANAGER: readonly Role[] = ['admin', 'manager'];

/**
 * The authenticated caller, as the gate admitted them: a staff member from their token and staff
 * row, or an API key (kind api_key: its id, admin reach within its scopes).
 */
export interface AuthUser {
  kind: 'staff' | 'api_key';
  id: string;
  role: Role;
  name: string;
  email: string;
  department: string | null;
  jti: string;
  exp: number;
  /** When the token was issued (seconds); a refresh never dates its new token earlier. */
  iat?: number;
  /** An API key's scopes (kind api_key only). */
  scopes?: readonly Scope[];
  /**
   * An API key: the stored hash its secret matched (the current one, or the replaced one during a
   * rotation's grace period). Open streams and stream tickets are checked against it.
   */
  secretHash?: string;
}
