// Owns keeping attachment contents in an S3-compatible bucket through the AWS SDK: one object per
// sha256 (`sha256/<digest>`), written from the staged file as a stream and read back as one.
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { AttachmentStoreConfig } from '../../config-attachments.js';
import type { BlobStore } from './blob-store.js';

type S3Config = Extract<AttachmentStoreConfig, { kind: 's3' }>;

const missing = (err: unknown) =>
  err instanceof NoSuchKey ||
  err instanceof NotFound ||
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404;

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  constructor(
    config: S3Config,
    readonly stagingDir: string,
  ) {
    this.bucket = config.bucket;
    // The SDK reads AWS_REQUEST_CHECKSUM_CALCULATION and AWS_RESPONSE_CHECKSUM_VALIDATION from the
    // environment itself: set them to WHEN_REQUIRED for servers without its default checksums.
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint === null ? {} : { endpoint: config.endpoint }),
      forcePathStyle: config.forcePathStyle,
      credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    });
  }
  private key(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('not a sha256 digest');
    return `sha256/${sha256}`;
  }
  async put(sha256: string, path: string, size: number): Promise<void> {
    try {
      const Key = this.key(sha256);
      let exists = true;
      try {
        await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      } catch (err) {
        if (!missing(err)) throw err;
        exists = false;
      }
      if (!exists) {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key, Body: createReadStream(path), ContentLength: size }),
        );
      }
    } finally {
      await rm(path, { force: true });
    }
  }
  async get(sha256: string) {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(sha256) }));
      return { body: out.Body as Readable, size: Number(out.ContentLength ?? 0) };
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }
  async delete(sha256: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(sha256) }));
  }
  destroy(): void {
    this.client.destroy();
  }
}
