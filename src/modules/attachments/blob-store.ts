// Owns where attachment contents live: a folder (the default) or an S3-compatible bucket, each
// content kept once under its sha256. A file is received into a staging file first, hashed and
// checked as it streams (receive), and only then put under its digest, so a refused or broken
// upload never leaves anything behind and a content is never read whole into memory.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HEAD_BYTES, TextCheck } from './media.js';

export interface BlobStore {
  /** A folder on this machine where a file is received before it is put (same disk as the store's, when a folder). */
  readonly stagingDir: string;
  /** Keeps the staged file at `path` as the content `sha256` (once: an existing one is kept); `path` is gone after. */
  put(sha256: string, path: string, size: number): Promise<void>;
  /** The content's bytes, or null when the store has none under that digest. */
  get(sha256: string): Promise<{ body: Readable; size: number } | null>;
  delete(sha256: string): Promise<void>;
}

/** Thrown by receive when a file grows past its limit; nothing is kept. */
export class TooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the file is larger than ${limit} bytes`);
    this.name = 'TooLarge';
  }
}

export interface Received {
  path: string;
  size: number;
  sha256: string;
  /** The first HEAD_BYTES bytes, for sniffing. */
  head: Buffer;
  /** Valid UTF-8 without NUL from end to end. */
  text: boolean;
}

/** Counts, hashes and keeps the head of what streams through; errors past `limit` bytes. */
class Meter extends Transform {
  readonly hash = createHash('sha256');
  readonly text = new TextCheck();
  size = 0;
  private readonly heads: Buffer[] = [];
  private headLength = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limit) {
      done(new TooLarge(this.limit));
      return;
    }
    this.hash.update(chunk);
    this.text.push(chunk);
    if (this.headLength < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headLength);
      // A copy: the source may reuse its buffer once this chunk has passed.
      this.heads.push(Buffer.from(part));
      this.headLength += part.length;
    }
    done(null, chunk);
  }
  head(): Buffer {
    return Buffer.concat(this.heads);
  }
}

/**
 * Streams `source` into a new staging file of `store`, at most `limit` bytes, hashing it on the
 * way. On any failure (too large, the source broke) the staging file is removed and the error thrown.
 */
export async function receive(store: BlobStore, source: Readable, limit: number): Promise<Received> {
  await mkdir(store.stagingDir, { recursive: true });
  const path = join(store.stagingDir, `${Date.now()}-${randomBytes(8).toString('hex')}.part`);
  const meter = new Meter(limit);
  try {
    await pipeline(source, meter, createWriteStream(path, { flags: 'wx' }));
  } catch (err) {
    await rm(path, { force: true });
    throw err;
  }
  return { path, size: meter.size, sha256: meter.hash.digest('hex'), head: meter.head(), text: meter.text.end() };
}

/** Contents as files under `root`, named by digest in two levels of folders (ab/cd/abcd…). */
export class FileBlobStore implements BlobStore {
  readonly stagingDir: string;
  constructor(private readonly root: string) {
    this.stagingDir = join(root, '.staging');
  }
  private pathOf(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error('not a sha256 digest');
    return join(this.root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }
  async put(sha256: string, path: string): Promise<void> {
    const target = this.pathOf(sha256);
    await mkdir(join(target, '..'), { recursive: true });
    // A rename within one disk is atomic: a reader sees the whole content or none. The same content
    // renamed over itself is the same bytes.
    await rename(path, target);
  }
  async get(sha256: string) {
    const path = this.pathOf(sha256);
    try {
      const s = await stat(path);
      return { body: createReadStream(path, { highWaterMark: 256 * 1024 }), size: s.size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }
}
