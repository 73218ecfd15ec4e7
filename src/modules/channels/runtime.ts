// Owns the channel dispatcher's life in one instance: started with the app, handed the texts this
// instance writes (claimed at birth, or woken to claim them: the routes pass it to the services as
// their LocalSender; other instances' texts are found by its poll), and stopped, with its leases
// handed back, when the app closes. It is not woken by every commit that writes events: most
// queue no text, and each wake-up costs a claim statement. Hourly, finished send jobs and unclaimed
// provider reports past their retention are purged (src/modules/channels/statuses.ts).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { outboundFiles } from '../attachments/outbound.js';
import { fillFiles } from '../attachments/service.js';
import { ChannelDispatcher } from './dispatcher.js';

const PURGE_EVERY_MS = 3_600_000;

declare module 'fastify' {
  interface FastifyInstance {
    channelDispatcher: ChannelDispatcher;
  }
}

export default fp(
  async function channelsRuntime(app: FastifyInstance) {
    const { config, store } = app.ctx;
    const dispatcher = new ChannelDispatcher({
      db: store,
      log: app.log,
      config: config.channels,
      files: outboundFiles(app.attachments),
      fill: fillFiles(app.attachments.signer),
    });
    app.decorate('channelDispatcher', dispatcher);
    dispatcher.start();
    const purge = setInterval(() => {
      dispatcher.purge().catch((err: unknown) => app.log.warn({ err }, 'channel records purge failed'));
    }, PURGE_EVERY_MS);
    purge.unref();
    app.addHook('onClose', async () => {
      clearInterval(purge);
      await dispatcher.stop();
    });
  },
  { name: 'channels-runtime' },
);
