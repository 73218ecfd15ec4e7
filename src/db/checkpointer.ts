// Owns checkpointing the SQLite WAL off the event loop. SQLite's automatic checkpoint runs inside
// the commit that crosses its threshold, on the connection that committed: better-sqlite3 is
// synchronous, so that commit (thousands of pages copied into the database file at random places,
// then an fsync) held the event loop, and every request in flight waited behind it; at 1M rows
// these were the mixed load's worst stalls (docs/performance.md). Here the server's connection
// never checkpoints; once its WAL has grown past a few MiB, a worker thread with a connection of
// its own checkpoints it every second: PASSIVE passes (never waiting for a lock, so readers and
// the writer carry on while it copies), then, once the WAL is large, a short RESTART. Should the
// worker die, the server's connection checkpoints automatically again, as before.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** WAL size past which the worker starts: a store that writes little never needs one. */
const START_BYTES = 4 * 1024 * 1024;
const WATCH_MS = 1000;
const CHECKPOINT_MS = 1000;
/**
 * WAL frames past which a checkpoint ends in RESTART. Writes arrive while a PASSIVE checkpoint
 * copies, so under steady writes it never finds the WAL fully copied and the WAL only grows; a
 * RESTART holds new writes back until it has copied the last frames and reset the WAL. Run after
 * PASSIVE passes have copied nearly everything, it holds them back only briefly.
 */
const RESTART_FRAMES = 4000;
/** The automatic checkpoint the server's connection falls back to, in pages. */
const FALLBACK_PAGES = 10_000;

// CommonJS, evaluated in the worker: the driver is required by the path the main thread resolved.
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = ' + workerData.synchronous);
const pass = (mode) => db.pragma('wal_checkpoint(' + mode + ')')[0];
const checkpoint = () => {
  try {
    let r = pass('PASSIVE');
    for (let i = 0; i < 4 && r.log - r.checkpointed > workerData.catchUpFrames; i++) r = pass('PASSIVE');
    if (r.log > workerData.restartFrames) pass('RESTART');
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

export function checkpointOffLoop(conn: SQLite.Database, path: string, synchronous: string): Checkpointer {
  conn.pragma('wal_autocheckpoint = 0');
  let worker: Worker | null = null;
  let stopping = false;
  const fallBack = () => {
    if (!stopping && conn.open) conn.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
  };
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
        catchUpFrames: 100,
        restartFrames: RESTART_FRAMES,
      },
    });
    w.unref();
    w.on('error', fallBack);
    w.on('exit', fallBack);
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
      fallBack();
    }
  }, WATCH_MS);
  watch.unref();
  return {
    async stop() {
      stopping = true;
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
