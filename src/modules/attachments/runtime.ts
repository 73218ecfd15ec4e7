// Owns the attachments' life in one instance: the content store (a folder or a bucket) and the
// link signer, made once from config and handed to the routes and services, and the hourly sweep
// that removes uploads no message took within 24 hours (docs/attachments.md).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type BlobStore, FileBlobStore } from './blob-store.js';
import { InboundFiles } from './inbound.js';
import type { S3BlobStore } from './s3-store.js';
import type { AttachmentDeps } from './service.js';
import { LinkSigner } from './signing.js';
import { sweepUnused } from './sweep.js';

const SWEEP_EVERY_MS = 3_600_000;

declare module 'fastify' {
  interface FastifyInstance {
    attachments: AttachmentDeps;
    /** Records and fetches the files guests send (src/modules/attachments/inbound.ts). */
    inboundFiles: InboundFiles;
  }
}

export default fp(
  async function attachmentsRuntime(app: FastifyInstance) {
    const { config, store } = app.ctx;
    const c = config.attachments;
    let s3: S3BlobStore | null = null;
    let blobs: BlobStore;
    if (c.store.kind === 'file') blobs = new FileBlobStore(c.store.root);
    else {
      // The S3 client (a large module tree) is loaded only by an instance configured for a bucket.
      const { S3BlobStore } = await import('./s3-store.js');
      blobs = s3 = new S3BlobStore(c.store, join(tmpdir(), 'gma-attachments'));
    }
    const base = config.channels.publicUrl ?? `http://${config.host}:${config.port}`;
    const signer = new LinkSigner(base, [config.jwtSecret, ...config.jwtPreviousSecrets]);
    const deps: AttachmentDeps = { blobs, signer, maxBytes: c.maxBytes };
    app.decorate('attachments', deps);
    const inbound = new InboundFiles(store, deps, config.channels, app.jobs);
    app.jobs.register(inbound.handler());
    app.decorate('inboundFiles', inbound);
    const sweep = setInterval(() => {
      sweepUnused(store, blobs, Date.now()).catch((err: unknown) => app.log.warn({ err }, 'attachments sweep failed'));
    }, SWEEP_EVERY_MS);
    sweep.unref();
    app.addHook('onClose', async () => {
      clearInterval(sweep);
      s3?.destroy();
    });
  },
  { name: 'attachments-runtime', dependencies: ['jobs-runtime'] },
);
