// Owns the cap on open event streams per caller (STREAMS_PER_CALLER): a slot is taken before a
// stream starts and given back when it ends. With Redis the slots are shared by every instance:
// each is a member of a sorted set per caller scored by its expiry, which its instance pushes
// forward while the stream lives, so the slots of a crashed instance lapse on their own. Without
// Redis (or while it is unreachable) slots are counted in this process.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface Slot {
  release(): void;
}

/** How long a slot outlives its last refresh: the longest a crashed instance's streams hold slots. */
const SLOT_TTL_MS = 60_000;
const REFRESH_EVERY_MS = SLOT_TTL_MS / 3;

// Drop lapsed slots, then take one if fewer than the cap are held; the server's clock, so
// instances whose clocks differ agree on when a slot lapses. Returns 1 if taken, else 0.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// Push a held slot's expiry forward (only if it is still held).
const REFRESH = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

interface SlotCommands {
  gmaStreamAcquire(key: string, cap: number, ttl: number, member: string): Promise<number>;
  gmaStreamRefresh(key: string, ttl: number, member: string): Promise<number>;
}

export class StreamSlots {
  /** Slots held in this process, by caller: all of them without Redis, else those Redis could not take. */
  private readonly local = new Map<string, number>();
  /** Slots this instance holds in Redis: member → key. */
  private readonly shared = new Map<string, string>();
  private readonly instance = randomBytes(6).toString('hex');
  private seq = 0;
  private readonly refresher: NodeJS.Timeout | undefined;

  constructor(
    readonly cap: number,
    private readonly redis: Redis | null,
  ) {
    if (redis !== null) {
      redis.defineCommand('gmaStreamAcquire', { numberOfKeys: 1, lua: ACQUIRE });
      redis.defineCommand('gmaStreamRefresh', { numberOfKeys: 1, lua: REFRESH });
      this.refresher = setInterval(() => this.refresh(), REFRESH_EVERY_MS);
      this.refresher.unref();
    }
  }

  /** A slot for one more stream of this caller, or null when the caller holds `cap` already. */
  async acquire(caller: string): Promise<Slot | null> {
    if (this.redis !== null) {
      const key = `streams:${caller}`;
      const member = `${this.instance}:${++this.seq}`;
      const cmd = this.redis as unknown as SlotCommands;
      let taken: number | undefined;
      try {
        taken = await cmd.gmaStreamAcquire(key, this.cap, SLOT_TTL_MS, member);
      } catch {
        // Redis unreachable: count in this process until it returns, as the rate limits do.
      }
      if (taken === 0) return null;
      if (taken === 1) {
        this.shared.set(member, key);
        return this.slot(() => {
          this.shared.delete(member);
          this.redis?.zrem(key, member).catch(() => {});
        });
      }
    }
    const held = this.local.get(caller) ?? 0;
    if (held >= this.cap) return null;
    this.local.set(caller, held + 1);
    return this.slot(() => {
      const n = (this.local.get(caller) ?? 1) - 1;
      if (n === 0) this.local.delete(caller);
      else this.local.set(caller, n);
    });
  }

  close(): void {
    if (this.refresher !== undefined) clearInterval(this.refresher);
  }

  /** Open streams this process holds slots for (shared and local). */
  get held(): number {
    let n = this.shared.size;
    for (const v of this.local.values()) n += v;
    return n;
  }

  private slot(free: () => void): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        free();
      },
    };
  }

  private refresh(): void {
    const redis = this.redis;
    if (redis === null || this.shared.size === 0) return;
    const pipeline = redis.pipeline() as unknown as SlotCommands & { exec(): Promise<unknown> };
    for (const [member, key] of this.shared) pipeline.gmaStreamRefresh(key, SLOT_TTL_MS, member);
    pipeline.exec().catch(() => {});
  }
}
