// Owns what the in-process benches (bench/search.ts, bench/suggestions.ts, bench/mix.ts) share: a
// seeded generator, so the same --seed draws the same requests, and timing a request through
// `inject` in wall time and in CPU time: this process's (on SQLite the whole request, the store runs
// in process) plus, on PostgreSQL, its server processes' (the backends of the bench's database, read
// from /proc/<pid>/schedstat, so PostgreSQL must run on this machine). CPU time holds on a loaded
// machine where wall time does not.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';

/** mulberry32: a small seeded generator, repeatable without the cost of crypto randomness. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class InjectTimer {
  private backends: number[] = [];

  // biome-ignore lint/suspicious/noExplicitAny: any schema: only pg_stat_activity is read.
  constructor(private readonly db: Kysely<any>) {}

  /** The database's client backends now (after a first request opened the app's connections). */
  async findBackends(): Promise<void> {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity
      where datname = current_database() and backend_type = 'client backend'`.execute(this.db);
    this.backends = rows.map((r) => r.pid);
  }

  private serverNs(): number {
    return this.backends.reduce((sum, pid) => {
      try {
        return sum + Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        return sum;
      }
    }, 0);
  }

  /** Sends `GET url` `runs` times, one at a time; pushes each one's wall and CPU ms. */
  async time(
    app: FastifyInstance,
    url: string,
    headers: Record<string, string>,
    runs: number,
    out: { times: number[]; cpu: number[] },
  ): Promise<void> {
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const s0 = this.serverNs();
      await app.inject({ method: 'GET', url, headers });
      out.times.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      out.cpu.push((c.user + c.system) / 1000 + (this.serverNs() - s0) / 1e6);
    }
  }
}
