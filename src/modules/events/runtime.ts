// Owns the moving parts of events in one instance: the stream hub, the access checks of open
// streams, the stream tickets, the webhook dispatcher, the wake-ups after each commit (in process, and through Redis
// pub/sub to every other instance), the retention purge, and stopping all of it when the app closes.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { WakeBus } from '../../lib/wake-bus.js';
import { Dispatcher } from '../webhooks/dispatcher.js';
import { EventHub } from './hub.js';
import { purgeBefore } from './repository.js';
import { StreamAccess, type StreamAccessOptions } from './stream-access.js';
import { StreamSlots } from './stream-slots.js';
import { type StreamTicketOptions, StreamTickets } from './tickets.js';

export interface EventsRuntime {
  hub: EventHub;
  /** Open streams per caller, capped at STREAMS_PER_CALLER (across instances with Redis). */
  slots: StreamSlots;
  /** Ends a stream once its caller has lost access; caps how long a stream lives. */
  access: StreamAccess;
  /** One-use tickets that open a stream without an Authorization header (browsers' EventSource). */
  tickets: StreamTickets;
  dispatcher: Dispatcher;
  /** Wake-ups across instances through Redis pub/sub, one pair of connections for every channel. */
  bus: WakeBus;
  /** Deletes events (and finished deliveries) older than the retention; returns events deleted. */
  purge(): Promise<number>;
}

declare module 'fastify' {
  interface FastifyInstance {
    eventsRuntime: EventsRuntime;
  }
}

/** Internal settings of streams and their tickets (tests shorten them). */
export type EventStreamOptions = StreamAccessOptions & StreamTicketOptions;

const PURGE_EVERY_MS = 3600_000;
/** The wake-up message of a commit that queued no webhook delivery (any other: it did). */
const NO_DELIVERIES = '0';
/** The wake-up channel of event commits (after the deployment's key prefix). */
const CHANNEL = 'events';
const DAY_MS = 86_400_000;

export default fp(
  async function eventsRuntime(app: FastifyInstance, opts: { eventStreams?: EventStreamOptions }) {
    const { config, store } = app.ctx;
    const hub = new EventHub(store, config.eventPollIntervalMs, app.log);
    const dispatcher = new Dispatcher({
      db: store,
      log: app.log,
      pollMs: config.eventPollIntervalMs,
      retryBaseMs: config.webhookRetryBaseMs,
      disableAfter: config.webhookDisableAfter,
      allowPrivate: config.webhookAllowPrivate,
    });
    // Streams poll for every new event; the dispatcher has work only when deliveries were queued
    // (retries come due on its own timer), so a commit that queued none does not wake it.
    const wake = (deliveries: boolean) => {
      hub.wake();
      if (deliveries) dispatcher.wake();
    };

    // The wake-ups of other instances' commits: the app's one pair of pub/sub connections, which
    // the job runner shares (src/modules/jobs/runtime.ts).
    const bus = new WakeBus(config.redisUrl, config.redisKeyPrefix);
    bus.subscribe(CHANNEL, (message) => wake(message !== NO_DELIVERIES));
    const off = store.eventsCommitted.on(({ deliveries }) => {
      wake(deliveries > 0);
      bus.publish(CHANNEL, deliveries > 0 ? '1' : NO_DELIVERIES);
    });

    const purge = () => purgeBefore(store, new Date(Date.now() - config.eventRetentionDays * DAY_MS));
    const tickets = new StreamTickets(store, opts.eventStreams);
    const purgeTimer = setInterval(() => {
      purge().catch((err) => app.log.warn({ err }, 'event purge failed'));
      tickets.purge().catch((err) => app.log.warn({ err }, 'stream ticket purge failed'));
    }, PURGE_EVERY_MS);
    purgeTimer.unref();

    const slots = new StreamSlots(config.streamsPerCaller, app.ctx.redis);
    const access = new StreamAccess(store, app.log, opts.eventStreams);
    app.decorate('eventsRuntime', { hub, slots, access, tickets, dispatcher, purge, bus } satisfies EventsRuntime);
    dispatcher.start();

    // Open streams would keep server.close() waiting for ever: end them before it is called.
    app.addHook('preClose', async () => {
      await hub.close();
    });
    // Registered after the app's own onClose (which closes the store), so it runs before it.
    app.addHook('onClose', async () => {
      off();
      slots.close();
      access.close();
      clearInterval(purgeTimer);
      await dispatcher.stop();
      bus.close();
    });
  },
  { name: 'events-runtime' },
);
