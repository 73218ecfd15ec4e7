// Owns loading the drivers a configuration may not need: pg only for a PostgreSQL store, ioredis
// only when REDIS_URL is set. A server on the embedded SQLite default then never loads either
// (their modules cost memory for as long as the process runs; docs/performance.md).
import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type PG from 'pg';

const require = createRequire(import.meta.url);

export const loadPg = (): typeof PG => require('pg') as typeof PG;
export const loadRedis = (): typeof IORedis.Redis => (require('ioredis') as typeof IORedis).Redis;
