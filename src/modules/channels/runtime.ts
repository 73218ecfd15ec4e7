// Owns the channel dispatcher's life in one instance: started with the app, handed the texts this
// instance writes (claimed at birth, or woken to claim them: the routes pass it to the services as
// their LocalSender; other instances' texts are found by its poll), and stopped, with its leases
// handed back, when the app closes. It is not woken by every commit that writes events: most
// queue no text, and each wake-up costs a claim statement.
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
    app.decorate('channelDispatcher', dispatcher);
    dispatcher.start();
    app.addHook('onClose', async () => {
      await dispatcher.stop();
    });
  },
  { name: 'channels-runtime' },
);
