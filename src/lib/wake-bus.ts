// Owns the wake-ups that cross instances through Redis pub/sub: one connection that publishes and
// one in subscriber mode per app, shared by every channel (the event feed's commits, the job
// runner's new jobs), each message handed to the channel's handler. Without Redis it does nothing:
// every instance's poll still finds the work, only later.
import type { Redis } from 'ioredis';
import { loadRedis } from './optional-deps.js';

export class WakeBus {
  private readonly publisher: Redis | null = null;
  private readonly subscriber: Redis | null = null;
  private readonly handlers = new Map<string, (message: string) => void>();

  constructor(
    redisUrl: string | null,
    /**
     * Put before every channel's name, so deployments sharing a Redis do not wake each other. The
     * connections are the bus's own, without ioredis' keyPrefix: that applies to keys, not channels.
     */
    private readonly prefix: string,
  ) {
    if (redisUrl === null) return;
    const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 } as const;
    this.publisher = new (loadRedis())(redisUrl, options);
    this.subscriber = new (loadRedis())(redisUrl, { ...options, enableOfflineQueue: true });
    // The polls carry on while Redis is away; the app's own connection already reports it.
    this.publisher.on('error', () => {});
    this.subscriber.on('error', () => {});
    this.subscriber.on('message', (channel: string, message: string) => this.handlers.get(channel)?.(message));
  }

  /** Hands every message published on `name` (by any instance, this one too) to `handler`. */
  subscribe(name: string, handler: (message: string) => void): void {
    const channel = this.prefix + name;
    this.handlers.set(channel, handler);
    this.subscriber?.subscribe(channel).catch(() => {});
  }

  publish(name: string, message: string): void {
    this.publisher?.publish(this.prefix + name, message).catch(() => {});
  }

  close(): void {
    this.handlers.clear();
    this.publisher?.disconnect();
    this.subscriber?.disconnect();
  }
}
