// Owns the rules of settings: a key must be known (or custom.<name>), its value must fit the key's
// schema, at most MAX_CUSTOM_KEYS custom keys are kept, and a department elsewhere must be one the
// `departments` setting lists. Every write is one transaction with its event; a write to `journeys`
// or `hotel` also writes the job that plans every current and coming stay's steps again.

import type { TSchema } from 'typebox';
import type { Store } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import type { AuthUser } from '../../lib/auth.js';
import { AppError, conflict, type FieldError, fieldError, validation } from '../../lib/errors.js';
import { bodyChecker } from '../../lib/validation.js';
import type { AuditTrail } from '../audit/trail.js';
import { settingUpdated, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { insertJob } from '../jobs/repository.js';
import { REPLAN_KIND } from '../stays/journeys.js';
import { CUSTOM_KEY, customValueProblems, isKnownKey, MAX_CUSTOM_KEYS, SETTINGS } from './registry.js';
import {
  countCustomSettings,
  deleteSetting,
  getSetting as findSetting,
  getDepartments,
  putSetting,
  type SettingView,
} from './repository.js';

/**
 * The settings journey steps are planned from: saving one replans every current and coming stay,
 * in batches on the job runner (src/modules/stays/journey-steps.ts), not in this request. One live
 * job: saving again before it ran reschedules it. Found by the runner's poll (within a second).
 */
async function replanAfter(tx: Tx, key: string): Promise<void> {
  if (key === 'journeys' || key === 'hotel') await insertJob(tx, { kind: REPLAN_KIND, key: 'all' });
}

/** Each setting's value checker, compiled when first needed: every process (each test file too)
 * imports this module, and most never write most settings. */
const checkers = new Map<string, (value: unknown) => unknown>();
function checkerOf(key: string, schema: TSchema): (value: unknown) => unknown {
  let check = checkers.get(key);
  if (check === undefined) {
    check = bodyChecker(schema, 'value');
    checkers.set(key, check);
  }
  return check;
}

function checkValue(key: string, value: unknown) {
  if (value === undefined) throw validation([{ field: 'value', message: 'is required' }]);
  const def = SETTINGS[key];
  if (def === undefined) {
    const problems = customValueProblems(value);
    if (problems.length > 0) throw validation(problems);
    return;
  }
  checkerOf(key, def.schema)(value);
  const extra = def.check?.(value as never) ?? [];
  if (extra.length > 0) throw validation(extra);
}

const KNOWN_KEYS = Object.keys(SETTINGS).join(', ');
const unknownKey = (key: string) =>
  new AppError(
    'NOT_FOUND',
    `Setting ${key} not found: a key is one of ${KNOWN_KEYS}, or custom.<name> for one of your own ` +
      '(name: 1 to 64 letters, digits, _ . -)',
  );

/** The problem with naming `department` in `field`, if it is not one the setting lists. */
export async function departmentProblem(
  db: Executor,
  department: string | null | undefined,
  field = 'department',
): Promise<FieldError | null> {
  if (department === null || department === undefined) return null;
  const known = await getDepartments(db);
  return known.includes(department) ? null : { field, message: `must be one of: ${known.join(', ')}` };
}

/** Throws VALIDATION_ERROR on `field` unless the department is one the setting lists. */
export async function checkDepartment(db: Executor, department: string | null | undefined, field = 'department') {
  const problem = await departmentProblem(db, department, field);
  if (problem !== null) throw fieldError(problem.field, problem.message);
}

/** A setting; a known key never set reads as its default. */
export async function getSetting(store: Store, key: string): Promise<SettingView> {
  if (!isKnownKey(key)) throw unknownKey(key);
  const s = await findSetting(store, key);
  if (s === undefined) throw unknownKey(key);
  return s;
}

export async function setSetting(
  store: Store,
  user: AuthUser,
  key: string,
  value: unknown,
  audit: AuditTrail,
): Promise<SettingView> {
  if (!isKnownKey(key)) throw unknownKey(key);
  checkValue(key, value);
  return withEvents(store, async (tx, outbox) => {
    const before = await findSetting(tx, key);
    if (before === undefined && (await countCustomSettings(tx)) >= MAX_CUSTOM_KEYS) {
      throw conflict(`At most ${MAX_CUSTOM_KEYS} custom settings are kept; delete one before adding another`);
    }
    // updatedBy names staff only (a foreign key); an API key writing is named by the event.
    const after = await putSetting(tx, key, value, user.kind === 'api_key' ? null : user.id);
    settingUpdated(outbox, staffActor(user), before, after);
    await replanAfter(tx, key);
    await audit.record(tx, 'settings.updated', { type: 'setting', id: key });
    return after;
  });
}

/** Resets a known key to its default, or removes a custom key (404 when it was not set). */
export async function resetSetting(store: Store, user: AuthUser, key: string, audit: AuditTrail): Promise<void> {
  if (!isKnownKey(key)) throw unknownKey(key);
  await withEvents(store, async (tx, outbox) => {
    const before = await findSetting(tx, key);
    const deleted = await deleteSetting(tx, key);
    if (!deleted && CUSTOM_KEY.test(key)) throw unknownKey(key);
    // A reset is an update to the default; a removed custom key reads as null.
    const after = (await findSetting(tx, key)) ?? { key, value: null, updatedAt: null, updatedBy: null };
    if (deleted) settingUpdated(outbox, staffActor(user), before, after);
    if (deleted) await replanAfter(tx, key);
    await audit.record(tx, 'settings.updated', { type: 'setting', id: key });
  });
}
