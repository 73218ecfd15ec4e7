// Owns the process configuration: read from the environment once, validated, typed and frozen.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type AttachmentsConfig, parseAttachments } from './config-attachments.js';
import { type ChannelsConfig, parseChannels } from './config-channels.js';
import { ConfigError } from './config-error.js';

export type StoreConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Config {
  readonly nodeEnv: string;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly store: StoreConfig;
  readonly sqliteSynchronous: 'FULL' | 'NORMAL';
  /** When route schemas compile: all at start-up, or each on its route's first request. */
  readonly schemaCompile: 'eager' | 'lazy';
  /** PostgreSQL: connections per instance. */
  readonly pgPoolSize: number;
  /** PostgreSQL: requests that may wait for a connection; past this one is answered 503 at once. */
  readonly pgPoolMaxWaiting: number;
  readonly redisUrl: string | null;
  /** Prefix of every Redis key, so several deployments (or test runs) can share one Redis. */
  readonly redisKeyPrefix: string;
  readonly jwtSecret: string;
  /** True when the secret is random for this process (no JWT_SECRET and nowhere to keep one). */
  readonly jwtSecretGenerated: boolean;
  /** Where the generated secret is kept, beside the embedded store; null when JWT_SECRET is set. */
  readonly jwtSecretFile: string | null;
  readonly jwtPreviousSecrets: readonly string[];
  /** Pepper of API key hashes; null: derived from JWT_SECRET (and JWT_SECRET_PREVIOUS). */
  readonly apiKeyPepper: string | null;
  readonly tokenTtlSeconds: number;
  readonly rateLimitStandard: number;
  readonly rateLimitBulk: number;
  /** Provider callbacks and inbound messages (/channels/*), per calling IP or staff member. */
  readonly rateLimitChannels: number;
  readonly rateLimitWindowSeconds: number;
  readonly loginLimit: number;
  readonly adminEmail: string | null;
  readonly adminPassword: string | null;
  readonly trustProxy: boolean;
  /** Bearer token that /metrics requires; null: /metrics is not served (404). */
  readonly metricsToken: string | null;
  /** Browser origins allowed to call the API (CORS); empty: no cross-origin access. */
  readonly corsOrigins: readonly string[];
  /**
   * On SIGTERM, how long /readyz answers 503 while every other request is still served, so a load
   * balancer takes the instance out before its listener closes (0: close at once).
   */
  readonly shutdownDrainMs: number;
  /** `pretty`: human-readable lines (default at a terminal outside production); `json`: pino JSON. */
  readonly logFormat: 'json' | 'pretty';
  /** Audit log entries older than this many days are purged. */
  readonly auditRetentionDays: number;
  /** Events older than this many days are purged from the feed. */
  readonly eventRetentionDays: number;
  /** How often each instance looks for new events and due deliveries written by any instance. */
  readonly eventPollIntervalMs: number;
  /** Interval of the comment line that keeps an idle event stream open through proxies. */
  readonly eventStreamHeartbeatMs: number;
  /** Allow webhook URLs on loopback, private or link-local addresses (tests, trusted networks). */
  readonly webhookAllowPrivate: boolean;
  /** First retry delay; each later one doubles (with full jitter), capped at 4 h. */
  readonly webhookRetryBaseMs: number;
  /** Consecutive failed attempts after which a webhook is set inactive. */
  readonly webhookDisableAfter: number;
  /** A request whose headers are not all in after this long is dropped (408). */
  readonly requestHeadersTimeoutMs: number;
  /** A request (headers and body) not all in after this long is dropped (408); never a response. */
  readonly requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this long. */
  readonly keepAliveTimeoutMs: number;
  /** Connections above this are refused at once (closed), instead of failing on EMFILE. */
  readonly maxConnections: number;
  /** Open event streams per caller (staff member or API key), across instances with Redis. */
  readonly streamsPerCaller: number;
  /** Keep conversation list pages under the store's data version (src/lib/page-cache.ts). */
  readonly pageCache: boolean;
  /**
   * PostgreSQL: the newest messages a search's recent index covers, kept between this many and twice
   * as many (src/modules/search/recent.ts); 0: none. SQLite ignores it.
   */
  readonly searchRecentMessages: number;
  /** Channel providers and the channel dispatcher (src/config-channels.ts). */
  readonly channels: ChannelsConfig;
  /** Where attachment contents are kept and how large they may be (src/config-attachments.ts). */
  readonly attachments: AttachmentsConfig;
}

// The parsers share ConfigError from its own module; callers keep importing it from here.
export { ConfigError };

type Env = Record<string, string | undefined>;

/**
 * A URL as an error may quote it: with its user name and password replaced by `***`, or null when it
 * does not parse (a malformed URL's password cannot be told apart from the rest, so none of it is
 * shown). Configuration errors and logs never show a URL's password (README, Configuration).
 */
export function shownUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.username === '' && url.password === '') return raw;
  url.username = '***';
  url.password = '';
  return url.toString();
}

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return def;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function parseStore(env: Env): StoreConfig {
  const url = str(env, 'DATABASE_URL');
  if (url === undefined) return { kind: 'sqlite', path: './data/guest-api.db' };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new ConfigError('DATABASE_URL', 'sqlite: needs a path, or sqlite::memory:');
    return { kind: 'sqlite', path };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url };
  }
  throw new ConfigError('DATABASE_URL', 'must be sqlite:<path>, sqlite::memory: or postgres://…');
}

function parseRedis(env: Env): string | null {
  const url = str(env, 'REDIS_URL');
  if (url === undefined) return null;
  if (!/^rediss?:\/\//.test(url)) throw new ConfigError('REDIS_URL', 'must start with redis:// or rediss://');
  try {
    new URL(url);
  } catch {
    throw new ConfigError('REDIS_URL', 'is not a valid URL');
  }
  return url;
}

/** Operations settings: metrics, CORS and the log format. */
function operations(env: Env, nodeEnv: string) {
  const metricsToken = str(env, 'METRICS_TOKEN') ?? null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,256}$/.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN', 'must be 16 to 256 visible ASCII characters');
  }
  const corsOrigins = (str(env, 'CORS_ORIGINS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const origin of corsOrigins) {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
      const shown = shownUrl(origin);
      throw new ConfigError(
        'CORS_ORIGINS',
        `${shown === null ? 'a value' : `"${shown}"`} is not an origin like https://dashboard.example.com`,
      );
    }
  }
  const format = str(env, 'LOG_FORMAT') ?? (process.stdout.isTTY && nodeEnv !== 'production' ? 'pretty' : 'json');
  if (format !== 'json' && format !== 'pretty') throw new ConfigError('LOG_FORMAT', 'must be json or pretty');
  return { metricsToken, corsOrigins: Object.freeze(corsOrigins), logFormat: format as 'json' | 'pretty' };
}

/**
 * The soft limit on open files of this process, from /proc/self/limits on Linux; elsewhere (or if
 * unreadable) 1024, the common default, so the derived connection cap errs low rather than high.
 */
export function openFilesLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(read());
    if (m === null) return 1024;
    if (m[1] === 'unlimited') return 1_048_576;
    const n = Number(m[1]);
    return Number.isSafeInteger(n) && n > 0 ? n : 1024;
  } catch {
    return 1024;
  }
}

/**
 * The default MAX_CONNECTIONS: the file limit less room for what else holds descriptors (the
 * store's files or pool, Redis, outgoing webhook deliveries, logs): a tenth, at least 64.
 * Event streams are connections, so they count inside the cap.
 */
export function defaultMaxConnections(openFiles: number): number {
  return Math.max(16, openFiles - Math.max(64, Math.ceil(openFiles / 10)));
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = str(env, 'NODE_ENV') ?? 'development';
  const logLevel = str(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }

  const givenSecret = str(env, 'JWT_SECRET');
  if (givenSecret === undefined && nodeEnv === 'production') {
    throw new ConfigError('JWT_SECRET', 'is required when NODE_ENV=production');
  }
  if (givenSecret !== undefined && Buffer.byteLength(givenSecret) < 32) {
    throw new ConfigError('JWT_SECRET', 'must be at least 32 bytes');
  }
  const jwtPreviousSecrets = (str(env, 'JWT_SECRET_PREVIOUS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of jwtPreviousSecrets) {
    if (Buffer.byteLength(s) < 32)
      throw new ConfigError('JWT_SECRET_PREVIOUS', 'each secret must be at least 32 bytes');
  }

  const apiKeyPepper = str(env, 'API_KEY_PEPPER') ?? null;
  if (apiKeyPepper !== null && Buffer.byteLength(apiKeyPepper) < 32) {
    throw new ConfigError('API_KEY_PEPPER', 'must be at least 32 bytes');
  }

  const adminEmail = str(env, 'ADMIN_EMAIL') ?? null;
  const adminPassword = str(env, 'ADMIN_PASSWORD') ?? null;
  if ((adminEmail === null) !== (adminPassword === null)) {
    throw new ConfigError(
      adminEmail === null ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD',
      'ADMIN_EMAIL and ADMIN_PASSWORD go together',
    );
  }
  if (adminEmail !== null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(adminEmail)) {
    throw new ConfigError('ADMIN_EMAIL', 'is not an e-mail address');
  }
  if (adminPassword !== null && [...adminPassword].length < 12) {
    throw new ConfigError('ADMIN_PASSWORD', 'must be at least 12 characters');
  }

  const sync = (str(env, 'SQLITE_SYNCHRONOUS') ?? 'FULL').toUpperCase();
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new ConfigError('SQLITE_SYNCHRONOUS', 'must be FULL or NORMAL');

  const schemaCompile = (str(env, 'SCHEMA_COMPILE') ?? 'eager').toLowerCase();
  if (schemaCompile !== 'eager' && schemaCompile !== 'lazy') {
    throw new ConfigError('SCHEMA_COMPILE', 'must be eager or lazy');
  }

  const requestHeadersTimeoutMs = int(env, 'REQUEST_HEADERS_TIMEOUT_MS', 10_000, 10, 3_600_000);
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 30_000, 10, 3_600_000);
  // Node refuses a headers timeout above the request timeout; say so by name instead.
  if (requestHeadersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'REQUEST_HEADERS_TIMEOUT_MS',
      `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${requestHeadersTimeoutMs}`,
    );
  }

  const jwtSecret = givenSecret ?? randomBytes(48).toString('base64url');
  return Object.freeze({
    nodeEnv,
    host: str(env, 'HOST') ?? '127.0.0.1',
    port: int(env, 'PORT', 3000, 0, 65535),
    logLevel,
    store: parseStore(env),
    sqliteSynchronous: sync,
    schemaCompile,
    pgPoolSize: int(env, 'PG_POOL_SIZE', 10, 1, 1000),
    pgPoolMaxWaiting: int(env, 'PG_POOL_MAX_WAITING', 1000, 0, 1_000_000),
    redisUrl: parseRedis(env),
    redisKeyPrefix: str(env, 'REDIS_KEY_PREFIX') ?? 'gma:',
    jwtSecret,
    jwtSecretGenerated: givenSecret === undefined,
    jwtSecretFile: null,
    jwtPreviousSecrets: Object.freeze(jwtPreviousSecrets),
    apiKeyPepper,
    tokenTtlSeconds: int(env, 'TOKEN_TTL_SECONDS', 86400, 60, 30 * 86400),
    rateLimitStandard: int(env, 'RATE_LIMIT_STANDARD', 100, 1, 10_000_000),
    rateLimitBulk: int(env, 'RATE_LIMIT_BULK', 10, 1, 10_000_000),
    rateLimitChannels: int(env, 'RATE_LIMIT_CHANNELS', 1000, 1, 10_000_000),
    rateLimitWindowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 3600),
    loginLimit: int(env, 'LOGIN_RATE_LIMIT', 10, 1, 10_000_000),
    adminEmail,
    adminPassword,
    trustProxy: bool(env, 'TRUST_PROXY', false),
    ...operations(env, nodeEnv),
    shutdownDrainMs: int(env, 'SHUTDOWN_DRAIN_MS', 0, 0, 120_000),
    eventRetentionDays: int(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', 365, 365, 3650),
    eventPollIntervalMs: int(env, 'EVENT_POLL_INTERVAL_MS', 1000, 10, 60_000),
    eventStreamHeartbeatMs: int(env, 'EVENT_STREAM_HEARTBEAT_MS', 15_000, 10, 300_000),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    webhookRetryBaseMs: int(env, 'WEBHOOK_RETRY_BASE_MS', 10_000, 1, 3_600_000),
    webhookDisableAfter: int(env, 'WEBHOOK_DISABLE_AFTER', 50, 1, 1_000_000),
    requestHeadersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 10, 3_600_000),
    maxConnections: int(env, 'MAX_CONNECTIONS', defaultMaxConnections(openFilesLimit()), 1, 10_000_000),
    streamsPerCaller: int(env, 'STREAMS_PER_CALLER', 10, 1, 10_000),
    pageCache: bool(env, 'PAGE_CACHE', true),
    searchRecentMessages: int(env, 'SEARCH_RECENT_MESSAGES', 500_000, 0, 1_000_000_000),
    channels: parseChannels(env, jwtSecret),
    attachments: parseAttachments(env),
  });
}
