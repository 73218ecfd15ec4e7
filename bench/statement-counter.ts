// Owns counting what a benchmarked server sends to its store, from inside the server process: loaded
// with `--import` before the server, it wraps the drivers' query calls (pg's Client.query,
// better-sqlite3's statement runs) and writes, every 250 ms and at exit, the running totals to the
// file named by BENCH_COUNTS_FILE: round trips, statements (a simple query carrying several, such as
// a statement sent with its COMMIT, counts each), the process's CPU, and the statements by their
// first words. Benchmarks read it before and after a phase and divide the differences by the work
// done (bench/journeys.ts: per step).
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const file = process.env.BENCH_COUNTS_FILE;
const require = createRequire(import.meta.url);

const counts = { roundTrips: 0, statements: 0, byText: new Map<string, number>() };

/** A statement's first words, enough to tell the statements of a step apart. */
const label = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 90);

function count(text: unknown): void {
  counts.roundTrips++;
  if (typeof text !== 'string') return;
  const parts = text.split(';\n').filter((s) => s.trim() !== '');
  counts.statements += Math.max(1, parts.length);
  for (const p of parts) {
    const l = label(p);
    counts.byText.set(l, (counts.byText.get(l) ?? 0) + 1);
  }
}

function write(): void {
  if (file === undefined) return;
  const cpu = process.cpuUsage();
  const top = [...counts.byText].sort((a, b) => b[1] - a[1]).slice(0, 60);
  // Written aside and renamed: a reader never sees half a file.
  writeFileSync(
    `${file}.tmp`,
    JSON.stringify({
      roundTrips: counts.roundTrips,
      statements: counts.statements,
      cpuUs: cpu.user + cpu.system,
      byText: Object.fromEntries(top),
    }),
  );
  renameSync(`${file}.tmp`, file);
}

if (file !== undefined) {
  try {
    const pg = require('pg') as typeof import('pg');
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      const first = args[0];
      count(typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  } catch {
    // No pg here: a SQLite-only run.
  }
  try {
    const SQLite = require('better-sqlite3') as typeof import('better-sqlite3');
    const probe = new SQLite(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, unknown>;
    probe.close();
    for (const name of ['run', 'all', 'get', 'iterate']) {
      const fn = proto[name] as (...a: unknown[]) => unknown;
      proto[name] = function (this: { source: string }, ...args: unknown[]) {
        count(this.source);
        return fn.apply(this, args);
      };
    }
  } catch {
    // No better-sqlite3 here.
  }
  setInterval(write, 250).unref();
  process.on('exit', write);
}
