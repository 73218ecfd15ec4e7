// A property of the channel dispatcher ("at most once per send the API decides on", docs/channels.md),
// on the store under test: texts are written, dispatchers send them to a Twilio-shaped fake that
// answers each request at random (2xx with an id, 2xx without, 4xx, 5xx, no answer, the connection
// dropped once the body is in), and a dispatcher is made to crash at random points (its store is
// cut off mid-flight: it can neither record nor claim any more, as a killed process) while a new
// one starts on the same store. Each request names the dispatcher that made it.
//
// A send is decided when a dispatcher claims the text's job (each claim counts an attempt): when
// the text is written, when a retry it recorded comes due, when the lease of a dispatcher that died
// with the text runs out, and on POST …/retry. An answer that leaves the outcome unknown (no
// answer, a dropped connection, a 5xx) is retried: that retry is a new decided send. The property:
//   1. every text ends `sent` or `failed`;
//   2. no text reaches the provider more than CHANNEL_MAX_ATTEMPTS times, crashes included;
//   3. after an answer that decides the text (any 2xx, a 4xx) it reaches the provider again only
//      from another dispatcher, after the one that got the answer died;
//   4. a `sent` text carries the id of one of its accepted requests (null when that 2xx had none);
//      a `failed` one that was accepted failed only for attempts used up by dead dispatchers;
//   5. the texts of a conversation reach the provider in order.
// FUZZ_RUNS (default 8) and FUZZ_SEED choose the sample.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import pino from 'pino';
import { parseChannels } from '../../src/config-channels.js';
import { migrate } from '../../src/db/migrate.js';
import { nowIso, openStore, type Store } from '../../src/db/store.js';
import { newId } from '../../src/lib/ids.js';
import { ChannelDispatcher } from '../../src/modules/channels/dispatcher.js';
import { storeOutbound } from '../../src/modules/conversations/service.js';
import { freshDatabaseUrl, freshPostgres, JWT_SECRET, TEST_STORE } from '../helpers.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 8);
const SEED = Number(process.env.FUZZ_SEED ?? 20261127);
const MAX_ATTEMPTS = 4;

type Answer = 'accept' | 'no-id' | '4xx' | '5xx' | 'hang' | 'reset';
const DECISIVE: ReadonlySet<Answer> = new Set(['accept', 'no-id', '4xx']);

interface Hit {
  /** Its place among every request the fake got. */
  index: number;
  instance: number;
  body: string;
  answer: Answer;
  sid: string | null;
}

/** Twilio's Messages API, reached by each dispatcher under its own prefix (`/i<n>`). */
async function fakeProvider(t: TestContext) {
  const hits: Hit[] = [];
  const answers: Answer[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const instance = Number(/^\/i(\d+)\//.exec(req.url ?? '')?.[1] ?? -1);
      const body = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('Body') ?? '';
      const answer = answers.shift() ?? 'accept';
      const sid = answer === 'accept' ? `SM${randomBytes(8).toString('hex')}` : null;
      hits.push({ index: hits.length, instance, body, answer, sid });
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (answer === 'accept') json(201, { sid, status: 'queued' });
      else if (answer === 'no-id') json(201, { status: 'queued' });
      else if (answer === '4xx') json(400, { code: 21211, message: 'Invalid To number' });
      else if (answer === '5xx') json(500, { code: 20500, message: 'Internal error' });
      else if (answer === 'reset') req.socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, answers };
}

interface Scenario {
  /** Per text, the conversation it is written in, and whether the live dispatcher claims it at birth. */
  texts: { conversation: number; atBirth: boolean }[];
  answers: Answer[];
  /** After how many requests of the run a dispatcher crashes, ascending. */
  crashes: number[];
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  texts: fc.array(fc.record({ conversation: fc.nat(2), atBirth: fc.boolean() }), { minLength: 1, maxLength: 5 }),
  answers: fc.array(fc.constantFrom<Answer>('accept', 'no-id', '4xx', '5xx', 'hang', 'reset'), { maxLength: 10 }),
  crashes: fc.uniqueArray(fc.integer({ min: 1, max: 8 }), { maxLength: 2 }).map((c) => c.sort((a, b) => a - b)),
});

test(`the dispatcher sends each text at most once per send decided, and settles every text (${TEST_STORE})`, {
  timeout: 600_000,
}, async (t) => {
  const provider = await fakeProvider(t);
  const url = TEST_STORE === 'postgres' ? await freshPostgres(t, { migrated: true }) : await freshDatabaseUrl(t);
  const target = url.startsWith('sqlite:')
    ? ({ kind: 'sqlite', path: url.slice('sqlite:'.length) } as const)
    : ({ kind: 'postgres', url } as const);
  const main = openStore(target);
  t.after(() => main.close());
  if (target.kind === 'sqlite') await migrate(main);
  const log = pino({ level: 'silent' });

  let instances = 0;
  const start = () => {
    const n = instances++;
    const config = parseChannels(
      {
        TWILIO_ACCOUNT_SID: 'ACproperty',
        TWILIO_AUTH_TOKEN: 'token',
        TWILIO_SMS_FROM: '+15005550006',
        TWILIO_API_URL: `${provider.base}/i${n}`,
        PUBLIC_URL: 'https://guest-api.hotel.test',
        CHANNEL_POLL_INTERVAL_MS: '20',
        CHANNEL_RETRY_BASE_MS: '5',
        // The fake answers at once or never ('hang'): only a hang may outlast the timeout. A loaded
        // machine stalls the event loop for hundreds of ms, and an answer read after a stall that
        // outlasted the timer counts as none (the timer runs first) and is retried: the fake saw a
        // decisive answer, the property would fail with nothing wrong. So the timeout and the lease
        // are ten times any stall seen; a hang costs this much, a crash up to the lease.
        CHANNEL_SEND_TIMEOUT_MS: '1500',
        CHANNEL_LEASE_MS: '3000',
        CHANNEL_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      },
      JWT_SECRET,
    );
    const store = openStore(target);
    const dispatcher = new ChannelDispatcher({ db: store, log, config });
    dispatcher.start();
    return { n, store, dispatcher };
  };

  let run = 0;
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      run++;
      provider.answers.splice(0, provider.answers.length, ...s.answers);
      const firstHit = provider.hits.length;
      let live = start();
      const all = [live];
      /** The request count of the run when each dispatcher died. */
      const diedAt = new Map<number, number>();
      const texts = await writeTexts(main, run, s, live.dispatcher);
      try {
        // A liveness bound (property 1), not a timing: up to two crashes each wait out a lease.
        const deadline = Date.now() + 60_000;
        const crashes = [...s.crashes];
        while (
          !(await allSettled(
            main,
            texts.map((x) => x.id),
          ))
        ) {
          const made = provider.hits.length - firstHit;
          if (crashes.length > 0 && made >= crashes[0]!) {
            crashes.shift();
            // Cut off from its store mid-flight: nothing it does from now on is recorded, as if killed.
            await live.store.db.destroy();
            diedAt.set(live.n, provider.hits.length);
            live = start();
            all.push(live);
          }
          assert.ok(Date.now() < deadline, `texts still queued: ${JSON.stringify(s)}`);
          await sleep(5);
        }
      } finally {
        for (const i of all) await i.dispatcher.stop();
        for (const i of all) await i.store.close().catch(() => {});
      }
      const hits = provider.hits.slice(firstHit);
      const rows = await main
        .selectFrom('messages')
        .where(
          'id',
          'in',
          texts.map((x) => x.id),
        )
        .select(['id', 'delivery_status', 'external_id', 'error_code'])
        .execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      const what = () => `${JSON.stringify(s)}\nrequests: ${JSON.stringify(hits)}\nmessages: ${JSON.stringify(rows)}`;
      for (const text of texts) {
        const mine = hits.filter((h) => h.body === text.content);
        const m = byId.get(text.id)!;
        assert.ok(m.delivery_status === 'sent' || m.delivery_status === 'failed', `1. settled: ${what()}`);
        assert.ok(mine.length <= MAX_ATTEMPTS, `2. at most ${MAX_ATTEMPTS} requests: ${what()}`);
        for (let i = 1; i < mine.length; i++) {
          const [prev, next] = [mine[i - 1]!, mine[i]!];
          if (!DECISIVE.has(prev.answer)) continue;
          const died = diedAt.get(prev.instance);
          assert.ok(
            next.instance !== prev.instance && died !== undefined && died <= next.index,
            `3. sent again after a decisive answer only once its dispatcher died: ${what()}`,
          );
        }
        const accepted = mine.filter((h) => h.answer === 'accept' || h.answer === 'no-id');
        if (m.delivery_status === 'sent') {
          assert.ok(
            accepted.some((h) => h.sid === m.external_id),
            `4. sent with the id of an accepted request: ${what()}`,
          );
        } else if (accepted.length > 0) {
          assert.equal(m.error_code, 'ATTEMPTS_EXHAUSTED', `4. failed after an acceptance: ${what()}`);
          assert.ok(diedAt.has(accepted.at(-1)!.instance), `4. its acceptance was lost with its dispatcher: ${what()}`);
        }
      }
      for (const [k, text] of texts.entries()) {
        const later = texts.slice(k + 1).find((x) => x.conversation === text.conversation);
        if (later === undefined) continue;
        // A request a dead dispatcher still had on the wire may land late; any other is in order.
        const alive = (h: Hit) => !diedAt.has(h.instance) || h.index < diedAt.get(h.instance)!;
        const last = Math.max(-1, ...hits.filter((h) => h.body === text.content && alive(h)).map((h) => h.index));
        const first = Math.min(Infinity, ...hits.filter((h) => h.body === later.content).map((h) => h.index));
        assert.ok(last < first, `5. in order per conversation: ${what()}`);
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
});

/** Writes the scenario's texts (each conversation's a guest's own), queued with their send jobs. */
async function writeTexts(store: Store, run: number, s: Scenario, dispatcher: ChannelDispatcher) {
  const conversations = new Map<number, string>();
  const texts: { id: string; conversation: number; content: string }[] = [];
  for (const [i, x] of s.texts.entries()) {
    let conversationId = conversations.get(x.conversation);
    if (conversationId === undefined) {
      conversationId = await newConversation(store, run * 10 + x.conversation);
      conversations.set(x.conversation, conversationId);
    }
    const content = `run ${run} text ${i}`;
    const at = nowIso();
    const message = await store.transact((tx) =>
      storeOutbound(
        tx,
        'sms',
        {
          conversation_id: conversationId,
          direction: 'outbound',
          type: 'text',
          content,
          sender_type: 'system',
          sender_id: null,
          delivery_status: 'queued',
          created_at: at,
        },
        null,
        x.atBirth ? dispatcher : null,
      ),
    );
    texts.push({ id: message.id, conversation: x.conversation, content });
  }
  dispatcher.wake();
  return texts;
}

async function newConversation(store: Store, n: number): Promise<string> {
  const guestId = newId('gst');
  const id = newId('cnv');
  const now = nowIso();
  await store.db
    .insertInto('guests')
    .values({
      id: guestId,
      name: `Guest ${n}`,
      email: null,
      email_lower: null,
      phone: `+1555${String(2_000_000 + n)}`,
      tags: '[]',
      notes: null,
      search_text: `guest ${n}`,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await store.db
    .insertInto('conversations')
    .values({
      id,
      guest_id: guestId,
      channel: 'sms',
      status: 'open',
      assignee: null,
      subject: null,
      last_message_at: now,
      message_count: 0,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

async function allSettled(store: Store, ids: string[]): Promise<boolean> {
  const queued = await store
    .selectFrom('messages')
    .where('id', 'in', ids)
    .where('delivery_status', '=', 'queued')
    .select('id')
    .executeTakeFirst();
  return queued === undefined;
}
