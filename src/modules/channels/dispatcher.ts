// Owns sending outbound texts in one instance: claim due send jobs (a lease: one instance per job,
// and a crashed instance's jobs come back when its lease runs out, so every text is sent at least
// once), send through the channel's provider, and record the outcome with its event: sent, a retry
// with exponential backoff and full jitter, or failed with the provider's reason.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { ChannelsConfig } from '../../config-channels.js';
import type { Store } from '../../db/store.js';
import { SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { PollLoop } from '../events/poll-loop.js';
import { retryDelayMs } from '../webhooks/dispatcher.js';
import { applyStatus, loadForSend } from './delivery.js';
import { emailMessageId, Providers, providerFor, type SendResult } from './providers.js';
import { type ClaimedSend, claimSends, nextSendDueAt, recordSend, releaseSends } from './sends-repository.js';

/** Texts in flight at most per instance. */
const CONCURRENCY = 16;
/**
 * Claimed only once this many slots are free: a claim reads the due sends in order and leases them
 * in one write, so claiming a batch costs about what claiming one does, and claiming again as each
 * send finished made the claims most of the dispatcher's cost under a steady stream of texts.
 */
const CLAIM_BATCH = CONCURRENCY / 2;

/**
 * How long a claim lasts. An attempt is reading the message, the send (cut off at the send
 * timeout, src/modules/channels/providers.ts) and recording the outcome, so it ends well inside
 * this; and an instance that crashed mid-send holds its texts no longer than this before another
 * instance (or itself, restarted) sends them. 35 s with the default 15 s send timeout.
 */
export function leaseMs(sendTimeoutMs: number): number {
  return 2 * sendTimeoutMs + 5000;
}

export interface ChannelDispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  config: ChannelsConfig;
}

export class ChannelDispatcher {
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly loop: PollLoop;
  private readonly providers: Providers;

  constructor(private readonly o: ChannelDispatcherOptions) {
    this.providers = new Providers(o.config);
    this.loop = new PollLoop(
      () => this.step(),
      o.config.pollMs,
      (err) => o.log.warn({ err }, 'channel dispatcher: claiming sends failed'),
    );
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.shutdown.abort();
    await Promise.allSettled([...this.inFlight.values()]);
    this.providers.close();
  }

  private async step(): Promise<number | undefined> {
    const free = CONCURRENCY - this.inFlight.size;
    // The sends in flight wake the loop as they finish.
    if (free < CLAIM_BATCH) return undefined;
    const claimed = await claimSends(this.o.db, this.instance, free, leaseMs(this.o.config.sendTimeoutMs));
    // A claim of ours that is still in flight (its lease ran out under a very slow store, and we
    // claimed it again) is renewed, not sent a second time.
    for (const s of claimed) if (!this.inFlight.has(s.messageId)) this.launch(s);
    if (claimed.length === free) return undefined;
    const next = await nextSendDueAt(this.o.db);
    return next === null ? undefined : Math.max(0, next - Date.now());
  }

  private launch(s: ClaimedSend): void {
    const run = this.process(s)
      .catch((err) => this.o.log.error({ err, message: s.messageId }, 'channel send could not be recorded'))
      .finally(() => {
        this.inFlight.delete(s.messageId);
        this.wake();
      });
    this.inFlight.set(s.messageId, run);
  }

  private async send(ctx: NonNullable<Awaited<ReturnType<typeof loadForSend>>>): Promise<SendResult> {
    const { config } = this.o;
    const channel = ctx.outgoing.channel;
    if (channel === 'web') return { ok: true, externalId: ctx.message.id };
    if (config.dryRun) {
      this.o.log.info({ message: ctx.message.id, channel }, 'channels dry run: not sent');
      const id = channel === 'email' ? emailMessageId(config, ctx.message.id) : `dry_${ctx.message.id}`;
      return { ok: true, externalId: id };
    }
    if (providerFor(config, channel) === null) {
      return {
        ok: false,
        retryable: false,
        code: 'CHANNEL_NOT_CONFIGURED',
        message: `no provider is configured for the ${channel} channel`,
      };
    }
    return this.providers.send(ctx.outgoing, this.shutdown.signal);
  }

  private async process(s: ClaimedSend): Promise<void> {
    const { db } = this.o;
    const ctx = await loadForSend(db, s.messageId);
    // Only a queued text is sent: anything else was settled meanwhile (or the row is gone). Its job
    // is kept as finished, as a failed text's is, in case a retry wants it again.
    if (ctx === undefined || ctx.message.type !== 'text' || ctx.message.status !== 'queued') {
      await withEvents(db, async (tx) => {
        await recordSend(tx, s.messageId, this.instance, 'failed');
      });
      return;
    }
    const result = await this.send(ctx);
    if (!result.ok && this.shutdown.signal.aborted) return releaseSends(db, this.instance, [s.messageId]);
    const attempts = s.attempts + 1;
    const retry = !result.ok && result.retryable && attempts < this.o.config.maxAttempts;
    const next = retry
      ? { retryAt: new Date(Date.now() + retryDelayMs(attempts, this.o.config.retryBaseMs)).toISOString() }
      : result.ok
        ? ('sent' as const)
        : ('failed' as const);
    if (!result.ok) {
      this.o.log.warn({ message: s.messageId, code: result.code, retry }, 'channel send failed');
    }
    await withEvents(db, async (tx, outbox) => {
      if (!(await recordSend(tx, s.messageId, this.instance, next))) return;
      if (retry) return;
      const ref = { conversationId: ctx.message.conversationId, messageId: s.messageId, assignee: ctx.assignee };
      if (result.ok) {
        await applyStatus(tx, outbox, SYSTEM, ref, { status: 'sent', externalId: result.externalId, error: null });
      } else {
        const error = { code: result.code, message: result.message };
        await applyStatus(tx, outbox, SYSTEM, ref, { status: 'failed', error });
      }
    });
  }
}
