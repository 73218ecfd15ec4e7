// Owns stored settings: reading a key (or its default) and writing one.

import { type Param, prepared } from '../../db/prepared.js';
import { fromJson, nowIso, toIso, toJson } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { DEFAULT_DEPARTMENTS, SETTINGS } from './registry.js';

export interface SettingView {
  key: string;
  value: unknown;
  updatedAt: string | null;
  updatedBy: string | null;
}

// Prepared: settings are read on hot paths (a stay's "today", each text's report figures, each
// send's subject), where building and compiling the query cost more than running it.
const settingByKey = prepared((db, p: Param<{ key: string }>) =>
  db.selectFrom('settings').select(['key', 'value', 'updated_at', 'updated_by']).where('key', '=', p('key')),
);

export async function getSetting(db: Executor, key: string): Promise<SettingView | undefined> {
  const row = await db.first(settingByKey, { key });
  if (row) return { key, value: fromJson(row.value), updatedAt: toIso(row.updated_at), updatedBy: row.updated_by };
  const def = SETTINGS[key];
  return def && { key, value: structuredClone(def.default), updatedAt: null, updatedBy: null };
}

export async function listSettings(db: Executor): Promise<SettingView[]> {
  const rows = await db.selectFrom('settings').select(['key', 'value', 'updated_at', 'updated_by']).execute();
  const stored = new Map(rows.map((r) => [r.key, r]));
  const keys = [...new Set([...Object.keys(SETTINGS), ...stored.keys()])].sort();
  return keys.map((key) => {
    const r = stored.get(key);
    return r
      ? { key, value: fromJson(r.value), updatedAt: toIso(r.updated_at), updatedBy: r.updated_by }
      : { key, value: structuredClone(SETTINGS[key]!.default), updatedAt: null, updatedBy: null };
  });
}

export async function putSetting(db: Executor, key: string, value: unknown, by: string | null): Promise<SettingView> {
  const now = nowIso();
  await db
    .insertInto('settings')
    .values({ key, value: toJson(value), updated_at: now, updated_by: by })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: toJson(value), updated_at: now, updated_by: by }))
    .execute();
  return { key, value, updatedAt: now, updatedBy: by };
}

/** How many custom.* keys are stored. */
export async function countCustomSettings(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('settings')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('key', 'like', 'custom.%')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function deleteSetting(db: Executor, key: string): Promise<boolean> {
  const r = await db.deleteFrom('settings').where('key', '=', key).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The departments tasks and staff may name: the `departments` setting, or its default. */
export async function getDepartments(db: Executor): Promise<string[]> {
  const s = await getSetting(db, 'departments');
  return Array.isArray(s?.value) ? (s.value as string[]) : DEFAULT_DEPARTMENTS;
}
