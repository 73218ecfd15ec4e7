// Owns the ceiling: a bare Fastify server answering GET / with {"ok":true}, run as its own process
// so the API's req/s can be read as a share of what Fastify itself does on this machine.
import Fastify from 'fastify';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('PORT is required\n');
  process.exit(1);
}

const app = Fastify({ logger: false });
app.get('/', async () => ({ ok: true }));

const stop = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

await app.listen({ host: '127.0.0.1', port });
