// Owns /settings: read (admin, manager), write and reset (admin), each value checked against
// its key's schema from the registry.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ADMIN, ADMIN_MANAGER } from '../../lib/auth.js';
import { conflict, notFound, validation } from '../../lib/errors.js';
import { BODY_ERRORS, errorResponse, Nullable, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { bodyChecker } from '../../lib/validation.js';
import { settingUpdated, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { CUSTOM_KEY, customValueProblems, isKnownKey, MAX_CUSTOM_KEYS, SETTINGS } from './registry.js';
import { countCustomSettings, deleteSetting, getSetting, listSettings, putSetting } from './repository.js';

const Setting = Type.Object(
  {
    key: Type.String({ maxLength: 100 }),
    value: Type.Unknown({ description: 'The JSON value; its shape depends on the key' }),
    updatedAt: Nullable(Type.String({ format: 'date-time', maxLength: 30 })),
    updatedBy: Nullable(Type.String({ maxLength: 64, description: 'Staff id of the last writer; null for a default' })),
  },
  { $id: 'Setting' },
);
const KeyParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 100 }) });
const PutBody = Type.Object({ value: Type.Unknown() }, { additionalProperties: false, required: ['value'] });

const checkers = new Map(Object.entries(SETTINGS).map(([k, d]) => [k, bodyChecker(d.schema, 'value')]));

function checkValue(key: string, value: unknown) {
  if (value === undefined) throw validation([{ field: 'value', message: 'is required' }]);
  const def = SETTINGS[key];
  if (def === undefined) {
    const problems = customValueProblems(value);
    if (problems.length > 0) throw validation(problems);
    return;
  }
  checkers.get(key)!(value);
  const extra = def.check?.(value as never) ?? [];
  if (extra.length > 0) throw validation(extra);
}

const unknownKey = (key: string) => notFound('Setting', key);

export const settingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['settings'],
        summary: 'List settings: every known key (its default if never set) and every custom key set',
        response: { 200: Type.Object({ success: Type.Literal(true), data: Type.Array(Setting) }), ...STANDARD_ERRORS },
      },
    },
    async () => ok(await listSettings(app.ctx.store)),
  );

  app.get(
    '/:key',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['settings'],
        summary: 'Get a setting; a known key never set returns its default',
        params: KeyParams,
        response: { 200: Ok(Setting), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { key } = request.params;
      if (!isKnownKey(key)) throw unknownKey(key);
      const s = await getSetting(app.ctx.store, key);
      if (s === undefined) throw unknownKey(key);
      return ok(s);
    },
  );

  app.put(
    '/:key',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['settings'],
        summary: 'Set a setting (admin)',
        description: `Keys: ${Object.keys(SETTINGS).join(', ')}, and custom.<name> for any JSON value up to 64 KiB (at most ${MAX_CUSTOM_KEYS} custom keys; one more is 409 CONFLICT).`,
        params: KeyParams,
        body: PutBody,
        response: {
          200: Ok(Setting),
          ...STANDARD_ERRORS,
          409: errorResponse(`CONFLICT: ${MAX_CUSTOM_KEYS} custom keys are set already`),
          ...BODY_ERRORS,
        },
      },
    },
    async (request) => {
      const { key } = request.params;
      if (!isKnownKey(key)) throw unknownKey(key);
      const { value } = request.body as { value: unknown };
      checkValue(key, value);
      const saved = await withEvents(app.ctx.store, async (tx, outbox) => {
        const before = await getSetting(tx, key);
        if (before === undefined && (await countCustomSettings(tx)) >= MAX_CUSTOM_KEYS) {
          throw conflict(`At most ${MAX_CUSTOM_KEYS} custom settings are kept; delete one before adding another`);
        }
        const after = await putSetting(tx, key, value, request.user!.id);
        settingUpdated(outbox, staffActor(request.user!), before, after);
        return after;
      });
      return ok(saved);
    },
  );

  app.delete(
    '/:key',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['settings'],
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
      if (!isKnownKey(key)) throw unknownKey(key);
      await withEvents(app.ctx.store, async (tx, outbox) => {
        const before = await getSetting(tx, key);
        const deleted = await deleteSetting(tx, key);
        if (!deleted && CUSTOM_KEY.test(key)) throw unknownKey(key);
        // A reset is an update to the default; a removed custom key reads as null.
        const after = (await getSetting(tx, key)) ?? { key, value: null, updatedAt: null, updatedBy: null };
        if (deleted) settingUpdated(outbox, staffActor(request.user!), before, after);
      });
      return ok({ key, deleted: true });
    },
  );
};
