// Builds several apps on one store (a SQLite file, or one PostgreSQL database with one Redis key
// prefix) for tests of work shared by instances: jobs claimed once, runs across restarts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { freshPostgres, JWT_SECRET, redisEnv, TEST_STORE } from '../helpers.js';

export interface SharedStore {
  /** Starts one more app on the store; closed when the test ends (or by the caller). */
  start(env?: Record<string, string>): Promise<FastifyInstance>;
}

export async function sharedStore(t: TestContext): Promise<SharedStore> {
  const apps: FastifyInstance[] = [];
  // Before the database is made: after-hooks run in registration order, apps close first.
  t.after(() => Promise.allSettled(apps.map((a) => a.close())));
  let url: string;
  if (TEST_STORE === 'postgres') url = await freshPostgres(t, { migrated: true });
  else {
    const dir = mkdtempSync(join(tmpdir(), 'gma-jobs-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    url = `sqlite:${join(dir, 'jobs.db')}`;
  }
  const redis = redisEnv();
  return {
    async start(env = {}) {
      const config = loadConfig({
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        JWT_SECRET,
        DATABASE_URL: url,
        ...redis,
        ...env,
      });
      const app = await buildApp(config);
      apps.push(app);
      return app;
    },
  };
}

/** Waits until `check` holds (polled every 20 ms), failing after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
