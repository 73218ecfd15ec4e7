// Owns sending outbound texts in one instance: claim due send jobs (a lease: one instance per job,
// renewed while the send lasts, and a crashed instance's jobs come back when its lease runs out),
// each channel within its own slots, send through the channel's provider, and record the outcome
// with its event: sent (any acceptance), a retry with exponential backoff and full jitter, or
// failed with the provider's reason. A text is sent at most once per send decided: an outcome
// the store refuses is recorded again (never sent again), and each claim counts an attempt, so a
// text whose sends keep dying with their instance ends `failed` after the last attempt.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { ChannelsConfig } from '../../config-channels.js';
import type { Store } from '../../db/store.js';
import { Signal } from '../../lib/signal.js';
import { PollLoop } from '../events/poll-loop.js';
import { retryDelayMs } from '../jobs/backoff.js';
import { type FillFiles, loadForSend, type SendOutcome } from './delivery.js';
import { type Flight, Flights } from './flights.js';
import { OutcomeRecorder } from './outcomes.js';
import { type OutboundFiles, Providers } from './providers.js';
import {
  type ClaimedSend,
  claimSends,
  type LocalSender,
  nextSendDueAt,
  releaseSends,
  SEND_CHANNELS,
  type SendLease,
} from './sends-repository.js';
import { purgeChannelRecords } from './statuses.js';

/** Conversations remembered as having a text waiting (past this the memory restarts: one claim). */
const MAX_WAITING = 10_000;
/** The longest pause between two tries to record an outcome the store refused. */
const MAX_RECORD_BACKOFF_MS = 1000;

export interface ChannelDispatcherOptions {
  db: Store;
  log: FastifyBaseLogger;
  config: ChannelsConfig;
  /** Reads the files of a message being sent (src/modules/attachments/outbound.ts); none: texts only. */
  files?: OutboundFiles;
  /** Gives the messages of status events their files (attachments/service.ts fillFiles); none: as read. */
  fill?: FillFiles;
}

export class ChannelDispatcher implements LocalSender {
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  /** Each recorded outcome of a send, by its channel (the metrics count them). */
  readonly settled = new Signal<{ channel: string; outcome: 'sent' | 'failed' | 'retried' }>();
  private readonly flights: Flights;
  /** Texts claimed at birth that found their channel's slots taken, oldest first, with when they were adopted. */
  private readonly adopted: { send: ClaimedSend; at: number }[] = [];
  private readonly adoptedIn = new Map<string, number>();
  private stopping = false;
  /**
   * Conversations with a text queued here unclaimed that may still wait behind a send in flight
   * here; forgotten once a claim finds none of theirs while none of theirs is in flight here.
   */
  private readonly waiting = new Set<string>();
  /** Channels the last claim left out for want of slots: claimed again once a send of theirs ends. */
  private readonly excluded = new Set<string>();
  /** Whether the next step must claim (see step). */
  private claimWanted = true;
  private lastClaimAt = 0;
  /** When the earliest claimable text known at the last claim comes due. */
  private nextDueAt = 0;
  private readonly outcomes: OutcomeRecorder;
  private readonly loop: PollLoop;
  private readonly providers: Providers;
  /** Slots per channel, and the free slots a channel needs before it is claimed for. */
  private readonly slots: number;
  private readonly claimBatch: number;

  constructor(private readonly o: ChannelDispatcherOptions) {
    this.providers = new Providers(o.config, o.log);
    this.outcomes = new OutcomeRecorder(o.db, this.instance, o.fill ?? null);
    this.slots = o.config.concurrency;
    // A claim reads the due sends in order and leases them in one write, so claiming a batch costs
    // about what claiming one does: claiming again as each send finished made the claims most of
    // the dispatcher's cost under a steady stream of texts.
    this.claimBatch = Math.max(1, Math.floor(this.slots / 2));
    this.flights = new Flights({
      db: o.db,
      instance: this.instance,
      leaseMs: o.config.leaseMs,
      sendTimeoutMs: o.config.sendTimeoutMs,
      log: o.log,
    });
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
    this.stopping = true;
    await this.loop.stop();
    // Leases are no longer renewed: what is in flight ends while they last (they outlast a send
    // timeout, the longest an SMTP answer is still waited for now), or is claimed again after.
    this.flights.close();
    this.flights.abortAll();
    await Promise.allSettled([...this.flights.all()].map((f) => f.run));
    await this.handBack([...this.takeAdopted(() => true)]);
  }

  /** Deletes finished send jobs and unclaimed provider reports past their retention. */
  purge(): Promise<void> {
    return purgeChannelRecords(this.o.db);
  }

  /**
   * A lease for a text of `channel` being written in this instance (claim at birth: src/modules/
   * channels/sends-repository.ts insertSend), or null when this dispatcher should not take it:
   * stopping, or the channel's slots already taken. A text claimed at birth costs no claim
   * statement (on SQLite, no write and no commit of its own) and is sent as soon as its
   * transaction commits.
   */
  lease(channel: string): SendLease | null {
    if (this.stopping || this.flights.in(channel) + (this.adoptedIn.get(channel) ?? 0) >= this.slots) return null;
    const untilMs = Date.now() + this.o.config.leaseMs;
    return { instance: this.instance, until: new Date(untilMs).toISOString(), untilMs };
  }

  /** Sends a text claimed at birth, once its transaction has committed. */
  adopt(send: ClaimedSend): void {
    if (this.stopping) {
      void this.handBack([send]);
      return;
    }
    if (this.flights.has(send.messageId)) return;
    if (this.flights.in(send.channel) < this.slots) this.launch(send);
    else {
      this.adopted.push({ send, at: Date.now() });
      this.adoptedIn.set(send.channel, (this.adoptedIn.get(send.channel) ?? 0) + 1);
    }
  }

  /** A text was queued unclaimed here: claim now rather than at the next poll. */
  sentAtCommit(channel: string): void {
    this.settled.emit({ channel, outcome: 'sent' });
  }

  queued(conversationId: string): void {
    // It may wait behind a send of its conversation in flight here: claimed when that one ends.
    if (this.waiting.size >= MAX_WAITING) this.waiting.clear();
    this.waiting.add(conversationId);
    this.claimWanted = true;
    this.wake();
  }

  /** Gives back leases on texts not sent under them, so that any instance claims them again at once. */
  private async handBack(sends: ClaimedSend[]): Promise<void> {
    if (sends.length === 0) return;
    try {
      const ids = sends.map((s) => s.messageId);
      await releaseSends(this.o.db, this.instance, ids, true);
    } catch (err) {
      // Their leases run out instead, and the texts are claimed then.
      this.o.log.warn({ err }, 'channel dispatcher: handing back leases failed');
    }
  }

  /** Removes the adopted texts `pick` chooses, oldest first, each as it is chosen. */
  private *takeAdopted(pick: (a: { send: ClaimedSend; at: number }) => boolean): Generator<ClaimedSend> {
    for (let i = 0; i < this.adopted.length; ) {
      const a = this.adopted[i]!;
      if (!pick(a)) {
        i++;
        continue;
      }
      this.adopted.splice(i, 1);
      this.adoptedIn.set(a.send.channel, (this.adoptedIn.get(a.send.channel) ?? 1) - 1);
      yield a.send;
    }
  }

  private async step(): Promise<number | undefined> {
    // Texts adopted while their channel's slots were taken go first. One that waited for as long as
    // a send may take would risk its lease running out mid-send (and a second instance sending it
    // too): it is handed back to be claimed afresh instead.
    const now = Date.now();
    const stale = [...this.takeAdopted((a) => now - a.at > this.o.config.sendTimeoutMs)];
    // Launched as they are taken, so a channel's slots are counted with the ones just filled.
    for (const send of this.takeAdopted((a) => this.flights.in(a.send.channel) < this.slots)) {
      if (!this.flights.has(send.messageId)) this.launch(send);
    }
    if (stale.length > 0) {
      await this.handBack(stale);
      this.claimWanted = true;
    }
    // The channels with a batch's worth of free slots are claimed for; the others wait for their
    // sends to end (which wake the loop), so a channel whose provider hangs holds up only itself.
    const eligible: string[] = [];
    let limit = this.slots;
    this.excluded.clear();
    for (const c of SEND_CHANNELS) {
      const free = this.slots - this.flights.in(c) - (this.adoptedIn.get(c) ?? 0);
      if (free >= this.claimBatch) {
        eligible.push(c);
        limit = Math.min(limit, free);
      } else this.excluded.add(c);
    }
    if (eligible.length === 0) return undefined;
    // A claim runs only when something may be claimable: a text queued here unclaimed, a send
    // ending in a conversation where one was queued (the next in line) or in a channel left out,
    // a retry or a text handed back coming due, or the poll (other instances' texts, leases that
    // ran out). Other wake-ups (most sends ending) claim nothing.
    const pollAt = this.lastClaimAt + this.o.config.pollMs;
    if (!this.claimWanted && now < this.nextDueAt && now < pollAt) return Math.min(this.nextDueAt, pollAt) - now;
    this.claimWanted = false;
    this.lastClaimAt = now;
    const channels = this.excluded.size === 0 ? null : eligible;
    const claimed = await claimSends(this.o.db, this.instance, limit, this.o.config.leaseMs, channels);
    // A claim of ours that is still in flight (its lease ran out under a very slow store, and we
    // claimed it again) is renewed, not sent a second time.
    for (const s of claimed) if (!this.flights.has(s.messageId)) this.launch(s);
    if (this.waiting.size > 0) {
      const busy = new Set([...this.flights.all()].map((f) => f.send.conversationId));
      for (const c of this.waiting) if (!busy.has(c)) this.waiting.delete(c);
    }
    if (claimed.length === limit) {
      this.claimWanted = true;
      return undefined;
    }
    const next = await nextSendDueAt(this.o.db, channels);
    this.nextDueAt = next ?? Number.POSITIVE_INFINITY;
    return next === null ? undefined : Math.max(0, next - Date.now());
  }

  private launch(s: ClaimedSend): void {
    const flight = this.flights.add(s);
    flight.run = this.process(flight)
      .catch((err) => this.o.log.error({ err, message: s.messageId }, 'channel send failed unexpectedly'))
      .finally(() => {
        this.flights.delete(flight);
        // The next text of its conversation may have been waiting for this one, or its channel for a slot.
        if (this.waiting.has(s.conversationId) || this.excluded.has(s.channel)) this.claimWanted = true;
        this.wake();
      });
  }

  private async process(flight: Flight): Promise<void> {
    const { db, config } = this.o;
    const s = flight.send;
    const ctx = await loadForSend(db, s.messageId);
    // Only a queued text is sent: anything else was settled meanwhile (or the row is gone). Its job
    // is kept as finished, as a failed text's is, in case a retry wants it again.
    if (ctx === undefined || ctx.message.type !== 'text' || ctx.message.status !== 'queued') {
      return this.settle(flight, { messageId: s.messageId, next: 'failed', status: null });
    }
    const ref = { conversationId: ctx.message.conversationId, messageId: s.messageId, assignee: ctx.assignee };
    if (s.attempts > config.maxAttempts) {
      // Claimed again and again without an outcome ever recorded: its instances died mid-send.
      const message = `gave up after ${config.maxAttempts} attempts whose outcome was never recorded`;
      const change = { status: 'failed' as const, error: { code: 'ATTEMPTS_EXHAUSTED', message } };
      return this.settle(flight, { messageId: s.messageId, next: 'failed', status: { ref, change } });
    }
    if (this.o.files !== undefined) ctx.outgoing.attachments = await this.o.files.of(db, s.messageId);
    const result = await this.providers.send(ctx.outgoing, flight.abort.signal);
    if (!result.ok && result.retryable && this.stopping) {
      // Cut off by the shutdown: any instance sends it again at once (a new send: it may have gone).
      return releaseSends(db, this.instance, [s.messageId], false).catch(() => {});
    }
    const retry = !result.ok && result.retryable && s.attempts < config.maxAttempts;
    const retryAtMs = Date.now() + retryDelayMs(s.attempts, config.retryBaseMs);
    // Claimed again when it comes due (see step).
    if (retry) this.nextDueAt = Math.min(this.nextDueAt, retryAtMs);
    if (!result.ok) this.o.log.warn({ message: s.messageId, code: result.code, retry }, 'channel send failed');
    const outcome: SendOutcome = result.ok
      ? {
          messageId: s.messageId,
          next: 'sent',
          status: { ref, change: { status: 'sent', externalId: result.externalId, error: null } },
        }
      : retry
        ? { messageId: s.messageId, next: { retryAt: new Date(retryAtMs).toISOString() }, status: null }
        : {
            messageId: s.messageId,
            next: 'failed',
            status: { ref, change: { status: 'failed', error: { code: result.code, message: result.message } } },
          };
    return this.settle(flight, outcome);
  }

  /**
   * Records an outcome, again and again while the store refuses it (its lease renewed meanwhile):
   * the text is never sent again for want of its outcome. Stopping, it tries while the lease
   * lasts; then the text is claimed again when the lease runs out, as after a crash.
   */
  private async settle(flight: Flight, outcome: SendOutcome): Promise<void> {
    for (let n = 0; ; n++) {
      try {
        await this.outcomes.record(outcome);
        // A text found no longer queued (settled meanwhile) records its job only: no send to count.
        if (typeof outcome.next !== 'string' || outcome.status !== null) {
          const next = outcome.next;
          this.settled.emit({
            channel: flight.send.channel,
            outcome: typeof next === 'string' ? next : 'retried',
          });
        }
        return;
      } catch (err) {
        if (flight.lost || (this.stopping && Date.now() >= flight.leaseUntil)) {
          this.o.log.error({ err, message: outcome.messageId }, 'channel send outcome could not be recorded');
          return;
        }
        this.o.log.warn({ err, message: outcome.messageId }, 'channel send outcome not recorded yet; trying again');
        await sleep(Math.min(MAX_RECORD_BACKOFF_MS, 25 * 2 ** n) * (0.5 + Math.random() / 2));
      }
    }
  }
}
