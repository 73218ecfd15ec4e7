// Owns the signing secret the quick start keeps: with no JWT_SECRET outside production, the secret
// generated at the first start is kept beside the embedded SQLite store, so tokens and API keys made
// before a restart still work after it.
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Config, ConfigError, type StoreConfig } from './config.js';
import { messageIdKeyOf } from './config-channels.js';

/**
 * The configuration with the secret kept beside an embedded SQLite store when JWT_SECRET is not set
 * (outside production), so that tokens and API keys made before a restart still work after it: read
 * from `<store>.jwt-secret`, or made and written there (mode 0600, created exclusively so two
 * processes starting at once agree on one). A throw-away or PostgreSQL store has no directory of ours
 * to keep it in: the secret stays random per process. Called by the server once the configuration is
 * known to be good, so a bad variable leaves nothing behind (loadConfig itself touches no file).
 */
export function keepGeneratedSecret(config: Config): Config {
  if (!config.jwtSecretGenerated) return config;
  const kept = keptSecret(config.store);
  if (kept === null) return config;
  return Object.freeze({
    ...config,
    jwtSecret: kept.secret,
    jwtSecretGenerated: false,
    jwtSecretFile: kept.file,
    channels: Object.freeze({ ...config.channels, messageIdKey: messageIdKeyOf(kept.secret) }),
  });
}

function keptSecret(store: StoreConfig): { secret: string; file: string } | null {
  if (store.kind !== 'sqlite' || store.path === ':memory:') return null;
  const file = `${store.path}.jwt-secret`;
  const read = () => readFileSync(file, 'utf8').trim();
  try {
    const secret = read();
    if (Buffer.byteLength(secret) >= 32) return { secret, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError('JWT_SECRET', `is not set and the kept secret ${file} cannot be read`);
    }
  }
  try {
    mkdirSync(dirname(file), { recursive: true });
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeSync(fd, `${randomBytes(48).toString('base64url')}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    // Another process made it first: its secret is the one.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ConfigError('JWT_SECRET', `is not set and a secret cannot be kept in ${file}`);
    }
  }
  const secret = read();
  if (Buffer.byteLength(secret) < 32) throw new ConfigError('JWT_SECRET', `is not set and ${file} is not a secret`);
  return { secret, file };
}
