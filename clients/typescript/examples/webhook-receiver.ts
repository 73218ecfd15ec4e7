// A webhook endpoint: checks each request's signature over the raw body before reading it,
// answers 2xx at once, and handles each delivery once (deliveries are at least once).
// Run (from clients/typescript, after npm install): WEBHOOK_SECRET=whsec_… npx tsx examples/webhook-receiver.ts
import { createServer } from 'node:http';
import { type Event, verifyWebhook } from '../src/index.js';

const secret = process.env.WEBHOOK_SECRET ?? '';
const seen = new Set<string>();

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const headers = {
      'webhook-id': req.headers['webhook-id'] as string | undefined,
      'webhook-timestamp': req.headers['webhook-timestamp'] as string | undefined,
      'webhook-signature': req.headers['webhook-signature'] as string | undefined,
    };
    if (!verifyWebhook(secret, headers, raw)) {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(204).end();
    const id = headers['webhook-id'] ?? '';
    if (seen.has(id)) return;
    seen.add(id);
    const { event } = JSON.parse(raw.toString('utf8')) as { event: Event };
    console.log(`${event.occurredAt} ${event.type} by ${event.actor.type}`);
  });
}).listen(Number(process.env.PORT ?? 4000));
