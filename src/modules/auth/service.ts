// Owns the rules of sessions: a login is counted per IP and e-mail and refused past the limit,
// a deactivated account gets no token, a refresh revokes the token it replaces (exactly once), and
// a password change refuses every token issued before it.
import type { Store } from '../../db/store.js';
import type { AuthUser, Role } from '../../lib/auth.js';
import { AppError, authError, fieldError } from '../../lib/errors.js';
import type { TokenService } from '../../lib/jwt.js';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../../lib/password.js';
import type { Counter } from '../../lib/rate-limiter.js';
import type { Revoke } from '../../plugins/revocation.js';
import type { AuditTrail } from '../audit/trail.js';
import { findPasswordHash, findStaff, findStaffForLogin, type StaffView, setPassword } from '../staff/repository.js';

/** What sessions need from the app (its `ctx`). */
export interface AuthDeps {
  store: Store;
  tokens: TokenService;
  counter: Counter;
  config: { loginLimit: number };
  /** Revokes a token id until its expiry; true when this call revoked it (src/plugins/revocation.ts). */
  revoke: Revoke;
}

export interface Session {
  token: string;
  expiresAt: string;
  user: { id: string; name: string; email: string; role: Role };
}

/**
 * Signs a session. `notBeforeSec` is the member's `tokens_valid_after`: a token must not be
 * issued (iat) before it, or the gate would refuse it at once (a login or refresh in the same
 * second as a password change).
 */
function session(
  deps: AuthDeps,
  user: { id: string; name: string; email: string; role: Role },
  notBeforeSec = 0,
): Session {
  const { token, claims } = deps.tokens.sign(user.id, user.role, Math.max(Date.now(), notBeforeSec * 1000));
  return {
    token,
    expiresAt: new Date(claims.exp * 1000).toISOString(),
    user: { id: user.id, name: user.name, email: user.email, role: user.role },
  };
}

/** Logs in from `ip`; at most `loginLimit` attempts per minute per IP and e-mail. */
export async function login(deps: AuthDeps, ip: string, email: string, password: string): Promise<Session> {
  const hit = await deps.counter.hit(`login:${ip}:${email.toLowerCase()}`, 60_000);
  if (hit.count > deps.config.loginLimit) {
    const retry = Math.max(1, Math.ceil((hit.resetAtMs - Date.now()) / 1000));
    throw new AppError('RATE_LIMITED', `Too many login attempts; retry in ${retry} s`, undefined, {
      'retry-after': String(retry),
    });
  }
  const staff = await findStaffForLogin(deps.store, email);
  const good = staff ? await verifyPassword(staff.password_hash, password) : await burnPasswordCheck(password);
  if (!staff || !good) throw authError('INVALID_CREDENTIALS', 'The e-mail or password is incorrect', false);
  if (!staff.active) throw authError('UNAUTHORIZED', 'This account is deactivated', false);
  return session(deps, staff, Number(staff.tokens_valid_after));
}

/** A new session for the caller; the token used is revoked. */
export async function refresh(deps: AuthDeps, user: AuthUser): Promise<Session> {
  // Exactly one refresh per token: a second one racing this one finds it already revoked.
  if (!(await deps.revoke(user.jti, user.exp))) {
    throw authError('TOKEN_INVALID', 'The token has been revoked', true);
  }
  return session(deps, user, user.iat ?? 0);
}

/** Revokes the caller's token; its audit entry is written with the revocation. */
export async function logout(deps: AuthDeps, user: AuthUser, audit: AuditTrail): Promise<void> {
  await deps.revoke(user.jti, user.exp, (tx) => audit.record(tx, 'auth.logout', null));
}

/** The caller's staff record (the gate has just read it, so it exists). */
export async function me(store: Store, user: AuthUser): Promise<StaffView> {
  return (await findStaff(store, user.id))!;
}

/** Changes the caller's password; every token of theirs issued before stops working. */
export async function changePassword(
  deps: AuthDeps,
  user: AuthUser,
  currentPassword: string,
  newPassword: string,
  audit: AuditTrail,
): Promise<Session> {
  const stored = await findPasswordHash(deps.store, user.id);
  if (!stored || !(await verifyPassword(stored.password_hash, currentPassword))) {
    throw fieldError('currentPassword', 'is incorrect');
  }
  if (currentPassword === newPassword) throw fieldError('newPassword', 'must differ from the current password');
  // Tokens carry whole-second `iat`s: every token issued up to and including this second is
  // refused from now on (so is one issued earlier in the same second), and the new session is
  // dated from the next second.
  const validAfter = Math.floor(Date.now() / 1000) + 1;
  const hash = await hashPassword(newPassword);
  await deps.store.transact(async (tx) => {
    await setPassword(tx, user.id, hash, validAfter);
    tx.onCommit(() => void deps.counter.bumpGeneration());
    await audit.record(tx, 'auth.password_changed', null);
  });
  return session(deps, user, validAfter);
}
