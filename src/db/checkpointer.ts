// Owns checkpointing the SQLite WAL off the event loop. SQLite's automatic checkpoint runs inside
// the commit that crosses its threshold, on the connection that committed: better-sqlite3 is
// synchronous, so that commit (thousands of pages copied into the database file at random places,
// then an fsync) held the event loop, and every request in flight waited behind it; at 1M rows
// these were the mixed load's worst stalls (docs/performance.md). Here, once the WAL has grown past
// a few MiB, a worker thread with a connection of its own checkpoints it PASSIVE every second:
// it never takes a lock a reader or the writer waits for, and copies what was committed since its
// last pass. The server's connection keeps its automatic checkpoint, which then finds little left
// to copy (and still resets a WAL that steady writes never let a background pass finish). Never
// RESTART or FULL here: they hold the write lock, and a transaction of the server's that read
// before writing then fails at once with SQLITE_BUSY instead of waiting.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** WAL size past which the worker starts: a store that writes little never needs one. */
const START_BYTES = 4 * 1024 * 1024;
const WATCH_MS = 1000;
const CHECKPOINT_MS = 1000;

// CommonJS, evaluated in the worker: the driver is required by the path the main thread resolved.
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = ' + workerData.synchronous);
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {}
};
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Stops the worker (after a last checkpoint) and closes its connection. */
  stop(): Promise<void>;
}

export function checkpointOffLoop(path: string, synchronous: string): Checkpointer {
  let worker: Worker | null = null;
  const start = () => {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const w = new Worker(WORKER_CODE, {
      eval: true,
      // No loader or profiler flags of the main thread: the worker runs plain CommonJS.
      execArgv: [],
      workerData: {
        driver,
        path,
        synchronous,
        everyMs: CHECKPOINT_MS,
      },
    });
    w.unref();
    // A worker that dies leaves the connection's own automatic checkpoint, as before it existed.
    w.on('error', () => {});
    worker = w;
  };
  const watch = setInterval(() => {
    try {
      if (statSync(`${path}-wal`).size < START_BYTES) return;
    } catch {
      return;
    }
    clearInterval(watch);
    try {
      start();
    } catch {
      // As above: the connection checkpoints by itself.
    }
  }, WATCH_MS);
  watch.unref();
  return {
    async stop() {
      clearInterval(watch);
      const w = worker;
      if (w === null) return;
      // Referenced again while it finishes, so a process closing its store waits for it.
      w.ref();
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage('stop');
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 5000);
      });
      await Promise.race([exited, timeout]);
      clearTimeout(timer);
      await w.terminate();
    },
  };
}
