// Owns the channel part of the configuration: which providers are set up (SMTP, Twilio, Meta
// WhatsApp Cloud), their base URLs, the public URL callbacks are signed against, and the
// dispatcher's timing. Credentials come from the environment only and are never logged.
import { createHmac } from 'node:crypto';
import { ConfigError } from './config-error.js';

type Env = Record<string, string | undefined>;

export interface ChannelsConfig {
  readonly dryRun: boolean;
  readonly publicUrl: string | null;
  readonly email: { readonly smtpUrl: string; readonly from: string } | null;
  readonly emailInboundSecret: string | null;
  /** Keys outbound Message-IDs (src/modules/channels/providers.ts emailMessageId); derived, never logged. */
  readonly messageIdKey: Buffer;
  readonly twilio: {
    readonly accountSid: string;
    readonly authToken: string;
    readonly smsFrom: string | null;
    readonly whatsappFrom: string | null;
    readonly apiUrl: string;
  } | null;
  readonly whatsapp: {
    readonly accessToken: string;
    readonly phoneNumberId: string;
    readonly apiUrl: string;
  } | null;
  readonly whatsappAppSecret: string | null;
  readonly whatsappVerifyToken: string | null;
  readonly pollMs: number;
  readonly retryBaseMs: number;
  readonly maxAttempts: number;
  readonly sendTimeoutMs: number;
  /** How long a claim on a send lasts unless renewed: how long a crashed instance holds its texts. */
  readonly leaseMs: number;
  /** How long an SMTP session waits for the server's answer once the message was transmitted. */
  readonly smtpAnswerTimeoutMs: number;
  /** Texts in flight at most per channel and instance. */
  readonly concurrency: number;
}

const E164 = /^\+[1-9]\d{6,14}$/;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function url(env: Env, name: string, def: string | undefined, schemes: string[]): string | undefined {
  const raw = str(env, name) ?? def;
  if (raw === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // Never the value itself: a malformed URL may hold a password (smtp://user:pass@…).
    throw new ConfigError(name, 'is not a valid URL (the value is not shown: it may hold a password)');
  }
  if (!schemes.includes(u.protocol))
    throw new ConfigError(name, `must start with ${schemes.map((s) => `${s}//`).join(' or ')}`);
  return raw.replace(/\/+$/, '');
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max)
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

/** Variables that go together: all set, or none. */
function group(env: Env, names: string[]): Record<string, string> | null {
  const set = names.filter((n) => str(env, n) !== undefined);
  if (set.length === 0) return null;
  const missing = names.find((n) => str(env, n) === undefined);
  if (missing !== undefined) throw new ConfigError(missing, `is required with ${set.join(', ')}`);
  return Object.fromEntries(names.map((n) => [n, str(env, n)!]));
}

/** `secret`: the deployment's signing secret (JWT_SECRET), from which the Message-ID key is derived. */
/** A key of its own (not the secret itself): a Message-ID reveals nothing that signs tokens. */
export function messageIdKeyOf(jwtSecret: string): Buffer {
  return createHmac('sha256', jwtSecret).update('gma email Message-ID').digest();
}

export function parseChannels(env: Env, secret: string): ChannelsConfig {
  const dryRaw = str(env, 'CHANNELS_DRY_RUN');
  if (dryRaw !== undefined && !['true', 'false', '1', '0'].includes(dryRaw)) {
    throw new ConfigError('CHANNELS_DRY_RUN', `must be true or false, got "${dryRaw}"`);
  }
  const email = group(env, ['SMTP_URL', 'EMAIL_FROM']);
  if (email !== null) url(env, 'SMTP_URL', undefined, ['smtp:', 'smtps:']);
  if (email !== null && !/^(.*<)?[^\s@<>]+@[^\s@<>]+>?$/.test(email.EMAIL_FROM!)) {
    throw new ConfigError('EMAIL_FROM', 'must be an e-mail address (optionally "Name <address>")');
  }
  const twilio = group(env, ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN']);
  const smsFrom = str(env, 'TWILIO_SMS_FROM') ?? null;
  const waFrom = str(env, 'TWILIO_WHATSAPP_FROM') ?? null;
  for (const [name, v] of [
    ['TWILIO_SMS_FROM', smsFrom],
    ['TWILIO_WHATSAPP_FROM', waFrom],
  ] as const) {
    if (v !== null && !E164.test(v)) throw new ConfigError(name, 'must be an E.164 number like +14155550100');
    if (v !== null && twilio === null) throw new ConfigError('TWILIO_ACCOUNT_SID', `is required with ${name}`);
  }
  const publicUrl = url(env, 'PUBLIC_URL', undefined, ['http:', 'https:']) ?? null;
  if (twilio !== null && publicUrl === null) {
    throw new ConfigError('PUBLIC_URL', 'is required when Twilio is configured (status callbacks and signatures)');
  }
  const wa = group(env, ['WHATSAPP_ACCESS_TOKEN', 'WHATSAPP_PHONE_NUMBER_ID']);
  const sendTimeoutMs = int(env, 'CHANNEL_SEND_TIMEOUT_MS', 15_000, 100, 120_000);
  // A lease outlasts two send timeouts: a send cut off at its timeout, or an SMTP session told to
  // end because its lease could not be renewed, still closes and records inside it.
  const leaseMs = int(env, 'CHANNEL_LEASE_MS', 2 * sendTimeoutMs + 5000, 200, 600_000);
  if (leaseMs < 2 * sendTimeoutMs) {
    throw new ConfigError('CHANNEL_LEASE_MS', `must be at least twice CHANNEL_SEND_TIMEOUT_MS (${2 * sendTimeoutMs})`);
  }
  return Object.freeze({
    dryRun: dryRaw === 'true' || dryRaw === '1',
    publicUrl,
    email: email && { smtpUrl: email.SMTP_URL!, from: email.EMAIL_FROM! },
    emailInboundSecret: str(env, 'EMAIL_INBOUND_SECRET') ?? null,
    messageIdKey: messageIdKeyOf(secret),
    twilio: twilio && {
      accountSid: twilio.TWILIO_ACCOUNT_SID!,
      authToken: twilio.TWILIO_AUTH_TOKEN!,
      smsFrom,
      whatsappFrom: waFrom,
      apiUrl: url(env, 'TWILIO_API_URL', 'https://api.twilio.com', ['http:', 'https:'])!,
    },
    whatsapp: wa && {
      accessToken: wa.WHATSAPP_ACCESS_TOKEN!,
      phoneNumberId: wa.WHATSAPP_PHONE_NUMBER_ID!,
      apiUrl: url(env, 'WHATSAPP_API_URL', 'https://graph.facebook.com/v21.0', ['http:', 'https:'])!,
    },
    whatsappAppSecret: str(env, 'WHATSAPP_APP_SECRET') ?? null,
    whatsappVerifyToken: str(env, 'WHATSAPP_VERIFY_TOKEN') ?? null,
    pollMs: int(env, 'CHANNEL_POLL_INTERVAL_MS', 1000, 10, 60_000),
    retryBaseMs: int(env, 'CHANNEL_RETRY_BASE_MS', 5000, 1, 3_600_000),
    maxAttempts: int(env, 'CHANNEL_MAX_ATTEMPTS', 8, 1, 100),
    sendTimeoutMs,
    leaseMs,
    // RFC 5321 §4.5.3.2.6: a client waits 10 minutes for the answer to the end of the message.
    smtpAnswerTimeoutMs: int(env, 'CHANNEL_SMTP_ANSWER_TIMEOUT_MS', 600_000, 100, 3_600_000),
    concurrency: int(env, 'CHANNEL_CONCURRENCY', 16, 1, 256),
  });
}
