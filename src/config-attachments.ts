// Owns the attachments part of the configuration: where file contents are kept (a folder, or an
// S3-compatible bucket) and how large one may be. Credentials come from the environment only.
import { ConfigError } from './config-error.js';

type Env = Record<string, string | undefined>;

export type AttachmentStoreConfig =
  | { readonly kind: 'file'; readonly root: string }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      readonly endpoint: string | null;
      readonly region: string;
      readonly forcePathStyle: boolean;
      readonly accessKeyId: string;
      readonly secretAccessKey: string;
    };

export interface AttachmentsConfig {
  readonly store: AttachmentStoreConfig;
  /** Largest file accepted, uploaded or fetched from a provider (bytes). */
  readonly maxBytes: number;
}

const MIB = 1024 * 1024;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function parseStore(env: Env): AttachmentStoreConfig {
  const raw = str(env, 'ATTACHMENTS_STORE') ?? 'file:./data/attachments';
  if (raw.startsWith('file:')) {
    const root = raw.slice('file:'.length);
    if (root === '') throw new ConfigError('ATTACHMENTS_STORE', 'file: needs a folder, like file:./data/attachments');
    return { kind: 'file', root };
  }
  if (!raw.startsWith('s3://')) {
    throw new ConfigError('ATTACHMENTS_STORE', 'must be file:<folder> or s3://<bucket>?endpoint=…&region=…');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('ATTACHMENTS_STORE', 'is not a valid s3:// URL');
  }
  if (url.hostname === '') throw new ConfigError('ATTACHMENTS_STORE', 's3:// needs a bucket name');
  const endpoint = url.searchParams.get('endpoint');
  if (endpoint !== null && !/^https?:\/\//.test(endpoint)) {
    throw new ConfigError('ATTACHMENTS_STORE', 'endpoint must be an http:// or https:// URL');
  }
  const accessKeyId = str(env, 'S3_ACCESS_KEY_ID');
  const secretAccessKey = str(env, 'S3_SECRET_ACCESS_KEY');
  if (accessKeyId === undefined) throw new ConfigError('S3_ACCESS_KEY_ID', 'is required with an s3:// store');
  if (secretAccessKey === undefined) throw new ConfigError('S3_SECRET_ACCESS_KEY', 'is required with an s3:// store');
  const pathStyle = url.searchParams.get('forcePathStyle');
  return {
    kind: 's3',
    bucket: url.hostname,
    endpoint,
    region: url.searchParams.get('region') ?? 'us-east-1',
    forcePathStyle: pathStyle === 'true' || pathStyle === '1',
    accessKeyId,
    secretAccessKey,
  };
}

export function parseAttachments(env: Env): AttachmentsConfig {
  const raw = str(env, 'ATTACHMENT_MAX_BYTES');
  let maxBytes = 16 * MIB;
  if (raw !== undefined) {
    maxBytes = Number(raw);
    if (!/^\d+$/.test(raw) || maxBytes < 1024 || maxBytes > 1024 * MIB) {
      throw new ConfigError('ATTACHMENT_MAX_BYTES', 'must be a whole number of bytes from 1024 to 1073741824');
    }
  }
  return Object.freeze({ store: Object.freeze(parseStore(env)), maxBytes });
}
