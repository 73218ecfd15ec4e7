// Owns fixed-window request counters: in process by default, in Redis when configured so every
// instance shares them. If Redis fails, counting falls back to the process until it answers again.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface Hit {
  /** Requests counted in this window, this one included. */
  count: number;
  /** Unix time in milliseconds when the window resets. */
  resetAtMs: number;
  /**
   * The shared generation read with the count (Redis only; absent in process or when Redis
   * failed): every instance sees it move at once, so what is kept under one generation is stale
   * under the next (the gate's staff rows, src/plugins/gate.ts).
   */
  generation?: string;
}

export interface Counter {
  hit(key: string, windowMs: number): Promise<Hit>;
  /** Takes back one hit of `key`'s current window (none when the window has ended since). */
  refund(key: string): Promise<void>;
  /**
   * Moves the shared generation, after a commit that changes what may be kept under it. Resolves
   * false when it could not (no Redis, or Redis failed).
   */
  bumpGeneration(): Promise<boolean>;
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

  async refund(key: string): Promise<void> {
    this.refundSync(key, Date.now());
  }

  refundSync(key: string, now: number): void {
    const w = this.windows.get(key);
    if (w !== undefined && w.resetAtMs > now && w.count > 0) w.count--;
  }

  /** In process there is nothing shared to move: nothing is kept under a generation here. */
  async bumpGeneration(): Promise<boolean> {
    return false;
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

// INCR and set the expiry on the first hit of a window, atomically; returns [count, ms left,
// the shared generation] (KEYS[2], read in the same round trip).
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl, redis.call('GET', KEYS[2]) or '0'}`;

// DECR only a window that still exists: DECR on an expired key would create one without expiry.
const REFUND_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0`;

const GENERATION_KEY = 'generation';

export class RedisCounter implements Counter {
  private readonly fallback = new MemoryCounter();

  constructor(
    private readonly redis: Redis,
    private readonly onFallback: (err: unknown) => void,
  ) {
    redis.defineCommand('gmaHit', { numberOfKeys: 2, lua: HIT_SCRIPT });
    redis.defineCommand('gmaRefund', { numberOfKeys: 1, lua: REFUND_SCRIPT });
  }

  async refund(key: string): Promise<void> {
    try {
      const cmd = (this.redis as unknown as { gmaRefund(k: string): Promise<number> }).gmaRefund;
      await cmd.call(this.redis, `rl:${key}`);
    } catch (err) {
      this.onFallback(err);
      this.fallback.refundSync(key, Date.now());
    }
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    const now = Date.now();
    try {
      const cmd = (
        this.redis as unknown as { gmaHit(k: string, g: string, w: number): Promise<[number, number, string]> }
      ).gmaHit;
      const [count, ttl, generation] = await cmd.call(this.redis, `rl:${key}`, GENERATION_KEY, windowMs);
      return { count, resetAtMs: now + ttl, generation };
    } catch (err) {
      this.onFallback(err);
      return this.fallback.hitSync(key, windowMs, now);
    }
  }

  async bumpGeneration(): Promise<boolean> {
    try {
      // A fresh random value rather than INCR: after a Redis restart forgets the key, a counter
      // would come back to values an instance may still hold rows under.
      await this.redis.set(GENERATION_KEY, randomUUID());
      return true;
    } catch (err) {
      this.onFallback(err);
      return false;
    }
  }

  close(): void {
    this.fallback.close();
  }
}
