// The live stream from a real browser (docs/events.md): headless Chromium loads a page the test serves
// on another origin (allowed by CORS_ORIGINS), whose script makes a stream ticket with fetch, follows
// GET /events/stream?ticket= with EventSource, and, when the server ends the stream, makes a new
// ticket and reopens after the last event id it saw: the pattern docs/events.md shows. The page
// reports what it sees by POSTing to the test's server. Skipped where no Chromium binary exists (CI
// installs one: .ci/run).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { listen } from './stream-helpers.js';

/** CHROMIUM_BIN, or the first Chromium or Chrome on PATH; null when there is none. */
function findChromium(): string | null {
  if (process.env.CHROMIUM_BIN) return process.env.CHROMIUM_BIN;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {}
    }
  }
  return null;
}

const CHROMIUM = findChromium();
const WAIT_MS = 15_000;

/** What the page reports: a stream opened (after which id), an event, a stream closed, a failure. */
type Report =
  | { kind: 'open'; after: string | null }
  | { kind: 'event'; id: string; type: string; name: string }
  | { kind: 'closed'; lastId: string | null }
  | { kind: 'failed'; message: string };

/** The page: the browser side of the pattern in docs/events.md, reporting each step to the test. */
const page = (api: string, token: string) => `<!doctype html>
<meta charset="utf-8"><title>Live events</title>
<script>
const API = ${JSON.stringify(`${api}/api/v1`)};
const TOKEN = ${JSON.stringify(token)};
const report = (what) => fetch('/report', { method: 'POST', body: JSON.stringify(what) });
let lastId = null;

async function newTicket() {
  const res = await fetch(API + '/events/stream-tickets', {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + TOKEN },
  });
  if (!res.ok) throw new Error('ticket: ' + res.status);
  return (await res.json()).data.ticket;
}

async function follow() {
  const query = new URLSearchParams({ ticket: await newTicket() });
  if (lastId !== null) query.set('after', lastId);
  const stream = new EventSource(API + '/events/stream?' + query);
  stream.onopen = () => report({ kind: 'open', after: lastId });
  stream.onmessage = (m) => {
    lastId = m.lastEventId;
    const event = JSON.parse(m.data);
    report({ kind: 'event', id: m.lastEventId, type: event.type, name: event.data.name });
  };
  stream.onerror = async () => {
    // Its own retry would send the spent ticket again: reopen with a new one, after the last id.
    stream.close();
    await report({ kind: 'closed', lastId });
    follow().catch((e) => report({ kind: 'failed', message: String(e) }));
  };
}
follow().catch((e) => report({ kind: 'failed', message: String(e) }));
</script>`;

/**
 * Ends the browser: SIGTERM lets it end and reap its own helper processes; whatever is left of its
 * process group after a few seconds is killed.
 */
async function stop(browser: ChildProcess): Promise<void> {
  if (browser.pid === undefined || browser.exitCode !== null || browser.signalCode !== null) return;
  const exited = new Promise((resolve) => browser.once('exit', resolve));
  browser.kill('SIGTERM');
  const outcome = await Promise.race([exited.then(() => 'exited'), sleep(5_000).then(() => 'running')]);
  try {
    process.kill(-browser.pid, 'SIGKILL');
  } catch {}
  if (outcome === 'running') await exited;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

test('a browser follows the stream with EventSource and a ticket, and reconnects with a new ticket after the last id', {
  skip: CHROMIUM === null ? 'no Chromium binary on PATH (apt-get install chromium; .ci/run does)' : false,
}, async (t) => {
  const reports: Report[] = [];
  /** Runs before the page's report is answered: the page waits for it. */
  let onReport = async (_r: Report) => {};
  let html = '';
  const pages = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST' && req.url === '/report') {
      readBody(req)
        .then(async (body) => {
          const r = JSON.parse(body) as Report;
          reports.push(r);
          await onReport(r);
        })
        .finally(() => res.end());
      return;
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(html);
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  t.after(() => pages.close());
  const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

  const app = await buildTestApp(t, { CORS_ORIGINS: origin });
  const admin = await createStaff(app, 'admin');
  const api = new URL(await listen(app)).origin;
  html = page(api, admin.token);
  const guest = async (name: string) => {
    const res = await call(app, 'POST', '/guests', { token: admin.token, body: { name } });
    assert.equal(res.status, 201, res.raw.body);
  };
  const waitFor = async (what: string, found: () => Report | undefined): Promise<Report> => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const r = found();
      if (r !== undefined) return r;
      const failed = reports.find((x) => x.kind === 'failed');
      assert.equal(failed, undefined, `the page failed: ${JSON.stringify(failed)}`);
      assert.ok(Date.now() < deadline, `no ${what} within ${WAIT_MS} ms: ${JSON.stringify(reports)}`);
      await sleep(20);
    }
  };
  const event = (name: string) => () => reports.find((r) => r.kind === 'event' && r.name === name);
  const opens = () => reports.filter((r) => r.kind === 'open');

  const profile = mkdtempSync(join(tmpdir(), 'gma-chromium-'));
  // Its own process group, so the browser and its helpers end together.
  const browser: ChildProcess = spawn(
    CHROMIUM!,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      `${origin}/`,
    ],
    { stdio: 'ignore', detached: true },
  );
  try {
    await waitFor('first stream', () => opens()[0]);
    await guest('Arrived live');
    const first = (await waitFor('live event', event('Arrived live'))) as { id: string };

    // While the page has no stream, an event happens: it must come on the reopened stream.
    onReport = async (r) => {
      if (r.kind === 'closed') await guest('While away');
    };
    // The server ends every open stream, as it does on shutdown or when a key's stream reaches its cap.
    app.eventsRuntime.hub.endAll();
    const closed = await waitFor('close', () => reports.find((r) => r.kind === 'closed'));
    assert.deepEqual(closed, { kind: 'closed', lastId: first.id });

    const reopened = await waitFor('second stream', () => opens()[1]);
    assert.deepEqual(reopened, { kind: 'open', after: first.id }, 'reopened after the last id seen');
    const away = (await waitFor('event made while away', event('While away'))) as { id: string };
    assert.ok(Number(away.id) > Number(first.id));
    await guest('Live again');
    await waitFor('live event after the reconnect', event('Live again'));
    const names = reports.flatMap((r) => (r.kind === 'event' ? [r.name] : []));
    assert.deepEqual(names, ['Arrived live', 'While away', 'Live again'], 'each event once, in order');
  } finally {
    await stop(browser);
    rmSync(profile, { recursive: true, force: true });
  }
});
