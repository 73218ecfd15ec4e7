// Helpers for the events, webhooks and stream tests: a real HTTP receiver on 127.0.0.1 that records
// what it gets and answers as told, signature checking as a receiver would do it, and feed reads.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { EVENT_TYPES } from '../../src/modules/events/schemas.js';
import { call } from '../helpers.js';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed delivery body, read field by field.
  json: any;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Status to answer for the n-th request (0-based); 200 by default. */
  answer: (n: number, r: Received) => number;
  /** Resolves once `count` requests arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  stop(): Promise<void>;
  /** Listens again on the same port after stop(). */
  start(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1; stopped when the test ends. */
export async function startReceiver(t: TestContext, port = 0): Promise<Receiver> {
  let server: Server | null = null;
  const r: Receiver = {
    url: '',
    port,
    received: [],
    answer: () => 200,
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (r.received.length < count) {
        if (Date.now() > deadline) {
          assert.fail(`receiver got ${r.received.length} of ${count} requests within ${timeoutMs} ms`);
        }
        await sleep(10);
      }
      return r.received;
    },
    async stop() {
      const s = server;
      server = null;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async start() {
      const s = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const got: Received = { headers: req.headers, body, json: JSON.parse(body), at: Date.now() };
          const status = r.answer(r.received.length, got);
          r.received.push(got);
          res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end('ok');
        });
      });
      await new Promise<void>((resolve) => s.listen(r.port, '127.0.0.1', resolve));
      server = s;
      r.port = (s.address() as AddressInfo).port;
      r.url = `http://127.0.0.1:${r.port}/hook`;
    },
  };
  await r.start();
  t.after(() => r.stop());
  return r;
}

/** What a receiver does: recompute the HMAC over "<timestamp>.<raw body>" and compare in constant time. */
export function signatureValid(secret: string, got: Received): boolean {
  const timestamp = String(got.headers['webhook-timestamp']);
  const header = String(got.headers['webhook-signature']);
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = `v1=${createHmac('sha256', secret).update(`${timestamp}.${got.body}`).digest('hex')}`;
  return header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
}

/** Env for apps that deliver webhooks to a local receiver quickly. */
export const WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '20', EVENT_POLL_INTERVAL_MS: '50' };

export interface FeedEvent {
  id: string;
  type: string;
  occurredAt: string;
  actor: { type: string; id: string | null };
  // biome-ignore lint/suspicious/noExplicitAny: the record in its API shape, read field by field.
  data: any;
  changes?: Record<string, { from: unknown; to: unknown }>;
}

/** Every event the caller may read after `after` (following nextCursor). */
export async function readFeed(app: FastifyInstance, token: string, query = '', after = '0'): Promise<FeedEvent[]> {
  const out: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const res = await call(app, 'GET', `/events?after=${cursor}&limit=100${query}`, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    out.push(...(res.data as FeedEvent[]));
    cursor = res.body.meta.nextCursor;
    if (!res.body.meta.hasMore) return out;
  }
}

/** Registers a webhook through the API and returns it with its secret. */
export async function registerWebhook(
  app: FastifyInstance,
  token: string,
  url: string,
  // The domain's events, named: "*" would also bring the endpoint's own webhook.created, which the
  // tests that count deliveries do not want to count.
  events: string[] = EVENT_TYPES.filter((t) => !/^webhook\./.test(t)),
): Promise<{ id: string; secret: string }> {
  const res = await call(app, 'POST', '/webhooks', { token, body: { url, events } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data;
}
