// Owns /settings: read (admin, manager), write and reset (admin); service.ts checks each value
// against its key's schema from the registry.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ADMIN, ADMIN_MANAGER } from '../../lib/auth.js';
import type { Current } from '../../lib/etag.js';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { BODY_ERRORS, errorResponse, exampleId, Nullable, Ok, ok, RefId, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail } from '../audit/trail.js';
import { isKnownKey, KEY_PATTERN, MAX_CUSTOM_KEYS, SETTINGS } from './registry.js';
import { getSetting as findSetting, listSettings } from './repository.js';
import { getSetting, resetSetting, setSetting } from './service.js';

/** The example key's (`hotel`) value, as a hotel would set it. */
const HOTEL = { name: 'Hotel Aurora', timezone: 'Europe/Lisbon', locale: 'pt-PT' };

const Setting = Type.Object(
  {
    key: Type.String({ maxLength: 100, pattern: KEY_PATTERN }),
    // The document gives each key its value's shape (src/plugins/openapi.ts).
    value: Type.Unknown({ description: 'The JSON value; its shape depends on the key' }),
    updatedAt: Nullable(Type.String({ format: 'date-time', maxLength: 30 })),
    updatedBy: Nullable(
      RefId(
        'stf',
        'Staff id of the last writer; null for a default, or when an API key wrote it (its event names the key)',
      ),
    ),
  },
  {
    $id: 'Setting',
    examples: [{ key: 'hotel', value: HOTEL, updatedAt: EXAMPLE_TIME, updatedBy: exampleId('stf') }],
  },
);
const KeyParams = Type.Object({
  key: Type.String({
    minLength: 1,
    maxLength: 100,
    description: `A known key (${Object.keys(SETTINGS).join(', ')}) or custom.<name> (1–64 of A-Z a-z 0-9 _ . -); any other key is 404 NOT_FOUND`,
    examples: ['hotel'],
  }),
});
const PutBody = Type.Object(
  { value: Type.Unknown({ examples: [HOTEL] }) },
  { additionalProperties: false, required: ['value'] },
);

/** A setting as GET /settings/:key shows it (its default when never set), for If-Match. */
const CURRENT_SETTING: Current = {
  table: 'settings',
  column: 'key',
  param: 'key',
  read: async (x, key) => (isKnownKey(key) ? findSetting(x, key) : undefined),
};

export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'settings:read' },
      schema: {
        tags: ['settings'],
        operationId: 'listSettings',
        summary: 'List settings: every known key (its default if never set) and every custom key set',
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            // Every known key, and at most MAX_CUSTOM_KEYS custom ones (one more is refused).
            data: Type.Array(Setting, { maxItems: Object.keys(SETTINGS).length + MAX_CUSTOM_KEYS }),
          }),
          ...STANDARD_ERRORS,
        },
      },
    },
    async () => ok(await listSettings(app.ctx.store)),
  );

  app.get(
    '/:key',
    {
      config: { access: ADMIN_MANAGER, scope: 'settings:read' },
      schema: {
        tags: ['settings'],
        operationId: 'getSetting',
        summary: 'Get a setting; a known key never set returns its default',
        params: KeyParams,
        response: { 200: Ok(Setting), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await getSetting(app.ctx.store, request.params.key)),
  );

  app.put(
    '/:key',
    {
      config: { access: ADMIN, scope: 'settings:write', current: { ...CURRENT_SETTING, upsert: true } },
      schema: {
        tags: ['settings'],
        operationId: 'setSetting',
        summary: 'Set a setting (admin)',
        description: `Keys: ${Object.keys(SETTINGS).join(', ')}, and custom.<name> for any JSON value up to 64 KiB (at most ${MAX_CUSTOM_KEYS} custom keys; one more is 409 CONFLICT).`,
        params: KeyParams,
        body: PutBody,
        response: {
          200: Ok(Setting),
          ...STANDARD_ERRORS,
          409: errorResponse(`CONFLICT: ${MAX_CUSTOM_KEYS} custom keys are set already`, 409),
          ...BODY_ERRORS,
        },
      },
    },
    async (request) => {
      const { value } = request.body as { value: unknown };
      return ok(await setSetting(app.ctx.store, request.user!, request.params.key, value, auditTrail(request)));
    },
  );

  app.delete(
    '/:key',
    {
      config: { access: ADMIN, scope: 'settings:write', current: CURRENT_SETTING },
      schema: {
        tags: ['settings'],
        operationId: 'resetSetting',
        summary: 'Reset a known key to its default, or remove a custom key (admin)',
        params: KeyParams,
        response: {
          200: Ok(Type.Object({ key: Type.String({ maxLength: 100 }), deleted: Type.Boolean() })),
          ...STANDARD_ERRORS,
        },
      },
    },
    async (request) => {
      const { key } = request.params;
      await resetSetting(app.ctx.store, request.user!, key, auditTrail(request));
      return ok({ key, deleted: true });
    },
  );
};
