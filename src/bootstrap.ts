// Owns the first admin: on an empty store, create one from ADMIN_EMAIL/ADMIN_PASSWORD, or an
// admin@example.com admin with a random password printed once, so a bare `npm start` is usable.
import type { Config } from './config.js';
import { isUniqueViolation } from './db/store.js';
import type { Executor } from './db/types.js';
import { generatePassword, hashPassword } from './lib/password.js';
import { countStaff, insertStaff } from './modules/staff/repository.js';

export interface CreatedAdmin {
  email: string;
  /** Set only when the password was generated and must be shown to the operator. */
  generatedPassword?: string;
}

export async function ensureAdmin(db: Executor, config: Config): Promise<CreatedAdmin | null> {
  if ((await countStaff(db)) > 0) return null;
  const email = config.adminEmail ?? 'admin@example.com';
  const generatedPassword = config.adminPassword === null ? generatePassword() : undefined;
  const password = config.adminPassword ?? generatedPassword!;
  try {
    await insertStaff(db, {
      name: 'Administrator',
      email,
      role: 'admin',
      department: null,
      passwordHash: await hashPassword(password),
    });
  } catch (err) {
    // Another instance starting on the same store created this admin first: nothing to do.
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  return generatedPassword === undefined ? { email } : { email, generatedPassword };
}
