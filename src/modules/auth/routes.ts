// Owns /auth: login, refresh (rotates), logout (revokes), me, and password change.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Role } from '../../lib/auth.js';
import { ANY_ROLE } from '../../lib/auth.js';
import { AppError, authError, fieldError } from '../../lib/errors.js';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../../lib/password.js';
import { BODY_ERRORS, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { findPasswordHash, findStaff, findStaffForLogin, setPassword } from '../staff/repository.js';
import { Password, RoleSchema, Staff } from '../staff/schemas.js';

const Session = Type.Object(
  {
    token: Type.String({ maxLength: 2048, description: 'Bearer token (JWT, HS256)' }),
    expiresAt: Type.String({ format: 'date-time', maxLength: 30 }),
    user: Type.Object({
      id: Type.String({ maxLength: 64 }),
      name: Type.String({ maxLength: 200 }),
      email: Type.String({ format: 'email', maxLength: 254 }),
      role: RoleSchema,
    }),
  },
  { $id: 'Session' },
);

const LoginBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);
const PasswordBody = Type.Object(
  { currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), newPassword: Password },
  { additionalProperties: false },
);

const AUTH_ERRORS = {
  400: STANDARD_ERRORS[400],
  401: STANDARD_ERRORS[401],
  429: STANDARD_ERRORS[429],
  500: STANDARD_ERRORS[500],
};

export const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { ctx } = app;
  const db = () => ctx.store;

  /**
   * Signs a session. `notBeforeSec` is the member's `tokens_valid_after`: a token must not be
   * issued (iat) before it, or the gate would refuse it at once (a login or refresh in the same
   * second as a password change).
   */
  function session(user: { id: string; name: string; email: string; role: Role }, notBeforeSec = 0) {
    const { token, claims } = ctx.tokens.sign(user.id, user.role, Math.max(Date.now(), notBeforeSec * 1000));
    return {
      token,
      expiresAt: new Date(claims.exp * 1000).toISOString(),
      user: { id: user.id, name: user.name, email: user.email, role: user.role },
    };
  }

  app.post(
    '/login',
    {
      config: { access: 'public' },
      schema: {
        tags: ['auth'],
        summary: 'Log in with e-mail and password',
        description: `At most ${ctx.config.loginLimit} attempts per minute per IP and e-mail.`,
        security: [],
        body: LoginBody,
        response: { 200: Ok(Session), ...AUTH_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { email, password } = request.body;
      const key = `login:${request.ip}:${email.toLowerCase()}`;
      const hit = await ctx.counter.hit(key, 60_000);
      if (hit.count > ctx.config.loginLimit) {
        const retry = Math.max(1, Math.ceil((hit.resetAtMs - Date.now()) / 1000));
        throw new AppError('RATE_LIMITED', `Too many login attempts; retry in ${retry} s`, undefined, {
          'retry-after': String(retry),
        });
      }
      const staff = await findStaffForLogin(db(), email);
      const good = staff ? await verifyPassword(staff.password_hash, password) : await burnPasswordCheck(password);
      if (!staff || !good) throw authError('INVALID_CREDENTIALS', 'The e-mail or password is incorrect', false);
      if (!staff.active) throw authError('UNAUTHORIZED', 'This account is deactivated', false);
      return ok(session(staff, Number(staff.tokens_valid_after)));
    },
  );

  app.post(
    '/refresh',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        summary: 'Exchange a valid token for a new one with a fresh expiry; the old token is revoked',
        response: { 200: Ok(Session), ...AUTH_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      // Exactly one refresh per token: a second one racing this one finds it already revoked.
      if (!(await ctx.revoke(user.jti, user.exp))) {
        throw authError('TOKEN_INVALID', 'The token has been revoked', true);
      }
      return ok(session(user, user.iat ?? 0));
    },
  );

  app.post(
    '/logout',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        summary: 'Revoke the token used for this request',
        response: { 200: Ok(Type.Object({ loggedOut: Type.Literal(true) })), ...AUTH_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      await ctx.revoke(user.jti, user.exp);
      return ok({ loggedOut: true as const });
    },
  );

  app.get(
    '/me',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        summary: 'The staff member the token belongs to',
        response: { 200: Ok(Staff), ...AUTH_ERRORS },
      },
    },
    async (request) => ok((await findStaff(db(), request.user!.id))!),
  );

  app.post(
    '/password',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        summary: 'Change your password; every other token of yours stops working, a new one is returned',
        body: PasswordBody,
        response: { 200: Ok(Session), ...AUTH_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      const { currentPassword, newPassword } = request.body;
      const stored = await findPasswordHash(db(), user.id);
      if (!stored || !(await verifyPassword(stored.password_hash, currentPassword))) {
        throw fieldError('currentPassword', 'is incorrect');
      }
      if (currentPassword === newPassword) throw fieldError('newPassword', 'must differ from the current password');
      // Tokens carry whole-second `iat`s: every token issued up to and including this second is
      // refused from now on (so is one issued earlier in the same second), and the new session is
      // dated from the next second.
      const validAfter = Math.floor(Date.now() / 1000) + 1;
      await setPassword(db(), user.id, await hashPassword(newPassword), validAfter);
      return ok(session(user, validAfter));
    },
  );
};
