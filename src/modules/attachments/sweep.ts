// Owns removing uploads no message took within 24 hours: their rows, and their contents when no
// other row names the same digest (a content is kept once for every row that names it).
import type { Store } from '../../db/store.js';
import type { BlobStore } from './blob-store.js';
import { contentInUse, deleteAttachment, unusedUploads } from './repository.js';

/** An upload no message took is removed once it is this old. */
export const UNUSED_TTL_MS = 24 * 3_600_000;
const BATCH = 200;

/** Removes the uploads unused since `nowMs - UNUSED_TTL_MS`; returns how many. */
export async function sweepUnused(store: Store, blobs: BlobStore, nowMs: number): Promise<number> {
  const before = new Date(nowMs - UNUSED_TTL_MS).toISOString();
  let removed = 0;
  for (;;) {
    const batch = await unusedUploads(store, before, BATCH);
    for (const row of batch) {
      await deleteAttachment(store, row.id);
      if (row.sha256 !== null && !(await contentInUse(store, row.sha256))) await blobs.delete(row.sha256);
      removed++;
    }
    if (batch.length < BATCH) return removed;
  }
}
