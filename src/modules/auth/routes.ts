// Owns /auth: login, refresh (rotates), logout (revokes), me, and password change; the rules of
// sessions are in service.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ANY_ROLE } from '../../lib/auth.js';
import { BODY_ERRORS, errorResponse, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail } from '../audit/trail.js';
import { Password, RoleSchema, Staff } from '../staff/schemas.js';
import { changePassword, login, logout, me, refresh } from './service.js';

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
  503: STANDARD_ERRORS[503],
};
/** The routes of a session (not login): an API key is refused there, as it has no session. */
const SESSION_ERRORS = {
  ...AUTH_ERRORS,
  403: errorResponse('FORBIDDEN: an API key has no session; these routes take a staff token', 403),
};

export const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { ctx } = app;

  app.post(
    '/login',
    {
      config: { access: 'public' },
      schema: {
        tags: ['auth'],
        operationId: 'login',
        summary: 'Log in with e-mail and password',
        description: `At most ${ctx.config.loginLimit} attempts per minute per IP and e-mail.`,
        security: [],
        body: LoginBody,
        response: { 200: Ok(Session), ...AUTH_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { email, password } = request.body;
      return ok(await login(ctx, request.ip, email, password));
    },
  );

  app.post(
    '/refresh',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        operationId: 'refreshToken',
        summary: 'Exchange a valid token for a new one with a fresh expiry; the old token is revoked',
        response: { 200: Ok(Session), ...SESSION_ERRORS },
      },
    },
    async (request) => ok(await refresh(ctx, request.user!)),
  );

  app.post(
    '/logout',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        operationId: 'logout',
        summary: 'Revoke the token used for this request',
        response: { 200: Ok(Type.Object({ loggedOut: Type.Literal(true) })), ...SESSION_ERRORS },
      },
    },
    async (request) => {
      await logout(ctx, request.user!, auditTrail(request));
      return ok({ loggedOut: true as const });
    },
  );

  app.get(
    '/me',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        operationId: 'getCurrentUser',
        summary: 'The staff member the token belongs to',
        response: { 200: Ok(Staff), ...SESSION_ERRORS },
      },
    },
    async (request) => ok(await me(ctx.store, request.user!)),
  );

  app.post(
    '/password',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['auth'],
        operationId: 'changePassword',
        summary: 'Change your password; every other token of yours stops working, a new one is returned',
        body: PasswordBody,
        response: { 200: Ok(Session), ...SESSION_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { currentPassword, newPassword } = request.body;
      return ok(await changePassword(ctx, request.user!, currentPassword, newPassword, auditTrail(request)));
    },
  );
};
