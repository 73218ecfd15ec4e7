// Owns the types of who is calling and what a route lets them do: the roles, the authenticated
// caller a request carries, and a route's declared access and rate-limit bucket. The gate
// plugin (gate.ts) enforces them; services and lib code only read them.

export type Role = 'admin' | 'manager' | 'staff';

/** Who may call a route: anyone, or callers holding one of these roles. */
export type Access = 'public' | readonly Role[];
/** The rate-limit bucket a route counts in. */
export type Bucket = 'standard' | 'bulk' | 'channels';

export const ANY_ROLE: readonly Role[] = ['admin', 'manager', 'staff'];
export const ADMIN: readonly Role[] = ['admin'];
export const ADMIN_MANAGER: readonly Role[] = ['admin', 'manager'];

/** The authenticated caller, as the gate admitted them from their token and staff row. */
export interface AuthUser {
  id: string;
  role: Role;
  name: string;
  email: string;
  department: string | null;
  jti: string;
  exp: number;
  /** When the token was issued (seconds); a refresh never dates its new token earlier. */
  iat?: number;
}
