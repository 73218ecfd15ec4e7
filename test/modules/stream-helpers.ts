// Helpers for the live stream tests: open GET /events/stream over real HTTP and parse the
// Server-Sent Events that arrive, block by block.
import assert from 'node:assert/strict';
import { get, type IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';

export interface StreamEvent {
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: the event JSON, read field by field.
  data: any;
}

export interface Stream {
  status: number;
  headers: IncomingHttpHeaders;
  events: StreamEvent[];
  comments: string[];
  body: string;
  ended: Promise<void>;
  /** Whether the server ended the response cleanly (its last chunk arrived), once `ended` resolves. */
  complete: boolean;
  waitFor(count: number, timeoutMs?: number): Promise<StreamEvent[]>;
  close(): void;
}

export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  return `http://127.0.0.1:${address.port}/api/v1/events/stream`;
}

/** Opens the stream with a real HTTP request and parses what arrives, block by block. */
export function openStream(url: string, token: string | null, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string> = { accept: 'text/event-stream', ...headers };
    if (token !== null) h.authorization = `Bearer ${token}`;
    const req = get(url, { headers: h }, (res) => {
      let buffer = '';
      let endedResolve = () => {};
      const s: Stream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: [],
        body: '',
        complete: false,
        ended: new Promise<void>((r) => {
          endedResolve = r;
        }),
        async waitFor(count, timeoutMs = 10_000) {
          const deadline = Date.now() + timeoutMs;
          while (s.events.length < count) {
            if (Date.now() > deadline) assert.fail(`stream got ${s.events.length} of ${count} events: ${s.body}`);
            await sleep(10);
          }
          return s.events;
        },
        close: () => req.destroy(),
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        s.body += chunk;
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split('\n');
          const id = lines.find((l) => l.startsWith('id: '))?.slice(4);
          const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
          for (const l of lines) if (l.startsWith(':')) s.comments.push(l);
          if (id !== undefined && data !== undefined) s.events.push({ id, data: JSON.parse(data) });
          end = buffer.indexOf('\n\n');
        }
      });
      res.on('end', () => {
        s.complete = res.complete;
        endedResolve();
      });
      res.on('close', endedResolve);
      resolve(s);
    });
    req.on('error', reject);
  });
}
