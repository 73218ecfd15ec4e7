// Owns password hashing: Argon2id with the library's OWASP-level defaults, plus a dummy hash so a
// login for an unknown e-mail spends the same time as one with a wrong password.
import { randomBytes } from 'node:crypto';
import { Algorithm, hash, verify } from '@node-rs/argon2';

export const MIN_PASSWORD_LENGTH = 12;

export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: Algorithm.Argon2id });
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;

/** Verifies against a throw-away hash and returns false: the cost of a wrong password. */
export async function burnPasswordCheck(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(await dummy, password);
  return false;
}

/** A random password shown once to a newly created staff member: 20 characters, ~119 bits. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}
