// Owns fixed-window request counters: in process by default, in Redis when configured so every
// instance shares them. If Redis fails, counting falls back to the process until it answers again.
import type { Redis } from 'ioredis';

export interface Hit {
  /** Requests counted in this window, this one included. */
  count: number;
  /** Unix time in milliseconds when the window resets. */
  resetAtMs: number;
}

export interface Counter {
  hit(key: string, windowMs: number): Promise<Hit>;
}

export class MemoryCounter implements Counter {
  private readonly windows = new Map<string, Hit>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    // Expired windows are dropped so the map stays bounded by the keys active in one window.
    this.sweeper = setInterval(() => this.sweep(Date.now()), 30_000);
    this.sweeper.unref();
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    return this.hitSync(key, windowMs, Date.now());
  }

  hitSync(key: string, windowMs: number, now: number): Hit {
    let w = this.windows.get(key);
    if (w === undefined || w.resetAtMs <= now) {
      w = { count: 0, resetAtMs: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetAtMs: w.resetAtMs };
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.resetAtMs <= now) this.windows.delete(k);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

// INCR and set the expiry on the first hit of a window, atomically; returns [count, ms left].
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

export class RedisCounter implements Counter {
  private readonly fallback = new MemoryCounter();

  constructor(
    private readonly redis: Redis,
    private readonly onFallback: (err: unknown) => void,
  ) {
    redis.defineCommand('gmaHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    const now = Date.now();
    try {
      const cmd = (this.redis as unknown as { gmaHit(k: string, w: number): Promise<[number, number]> }).gmaHit;
      const [count, ttl] = await cmd.call(this.redis, `rl:${key}`, windowMs);
      return { count, resetAtMs: now + ttl };
    } catch (err) {
      this.onFallback(err);
      return this.fallback.hitSync(key, windowMs, now);
    }
  }

  close(): void {
    this.fallback.close();
  }
}
