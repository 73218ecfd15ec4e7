// Owns the channel dispatcher's life in one instance: started with the app, woken after each
// commit that wrote events (every new text writes `message.created`; other instances' commits are
// found by its poll), and stopped, with its leases handed back, when the app closes.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ChannelDispatcher } from './dispatcher.js';

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
    });
    const off = store.eventsCommitted.on(() => dispatcher.wake());
    app.decorate('channelDispatcher', dispatcher);
    dispatcher.start();
    app.addHook('onClose', async () => {
      off();
      await dispatcher.stop();
    });
  },
  { name: 'channels-runtime' },
);
