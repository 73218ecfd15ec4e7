// Owns the attachments benchmark: the real server (a child process, the file store on a temporary
// folder) taking 16 MiB uploads and serving them back on loopback. Prints the upload and download
// rates (one at a time, and ten at once) and how far ten 16 MiB uploads at once raise the server's
// resident memory above its idle level (sampled every 5 ms, and the kernel's high-water mark).
// Run: `npm run bench:attachments` (about a minute). Figures only; nothing is asserted.
import { randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnNode, stopChild, waitForHttp } from './proc.js';
import { highWaterMiB, rssNowMiB } from './sampler.js';

const MIB = 1024 * 1024;
const SIZE = 16 * MIB;
const AT_ONCE = 10;
const ROUNDS = 8;
const cwd = join(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'gma-bench-att-'));

/** A 16 MiB "PDF" of random bytes (each different: no upload is a duplicate of another). */
function makeFile(i: number): string {
  const path = join(dir, `file-${i}.pdf`);
  writeFileSync(path, Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(SIZE - 9)]));
  return path;
}

/** POSTs `path` as the one `file` part of a multipart upload, streamed from disk. */
function upload(base: string, token: string, path: string): Promise<{ id: string; url: string }> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="folio.pdf"\r\n` +
      'Content-Type: application/pdf\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/api/v1/attachments`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + SIZE + tail.length,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString());
          if (res.statusCode !== 201) reject(new Error(`upload: ${res.statusCode} ${JSON.stringify(body)}`));
          else resolve(body.data);
        });
      },
    );
    req.on('error', reject);
    req.write(head);
    const file = createReadStream(path, { highWaterMark: 256 * 1024 });
    file.on('end', () => req.end(tail));
    file.pipe(req, { end: false });
  });
}

/** GETs a signed link and counts its bytes. */
function download(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`download: ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}

const rate = (bytes: number, ms: number) => `${((bytes / MIB) * (1000 / ms)).toFixed(0)} MiB/s`;

async function main() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const email = 'bench@hotel.test';
  const password = 'bench password long enough';
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: base,
    DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
    ATTACHMENTS_STORE: `file:${join(dir, 'store')}`,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    RATE_LIMIT_STANDARD: '10000000',
    REQUEST_TIMEOUT_MS: '600000',
  };
  // The flags of `npm start`, through tsx so no build is needed.
  const flags = ['--max-semi-space-size=8', '--heap-growing-percent=100', '--import', 'tsx', 'src/server.ts'];
  const server = spawnNode(flags, env, join(dir, 'server.log'), cwd);
  try {
    await waitForHttp(`${base}/healthz`, server);
    const login = await fetch(`${base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    const files = Array.from({ length: AT_ONCE }, (_, i) => makeFile(i));

    // Warm-up: the upload and download paths compiled and the store's folders made.
    const warm = await upload(base, token, files[0]!);
    await download(warm.url);
    await new Promise((r) => setTimeout(r, 500));
    const idle = (await rssNowMiB(server.pid))!;

    // Ten at once, the server's resident memory sampled while they run.
    let peak = idle;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await rssNowMiB(server.pid)) ?? 0);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    let t0 = performance.now();
    const many = await Promise.all(files.map((f) => upload(base, token, f)));
    const manyUpMs = performance.now() - t0;
    sampling = false;
    await sampler;
    const hwm = await highWaterMiB(server.pid);

    t0 = performance.now();
    await Promise.all(many.map((a) => download(a.url)));
    const manyDownMs = performance.now() - t0;

    // One at a time.
    t0 = performance.now();
    const one: { url: string }[] = [];
    for (let i = 0; i < ROUNDS; i++) one.push(await upload(base, token, files[i % AT_ONCE]!));
    const oneUpMs = performance.now() - t0;
    t0 = performance.now();
    for (const a of one) await download(a.url);
    const oneDownMs = performance.now() - t0;

    console.log(`attachments, file store on loopback, ${SIZE / MIB} MiB files`);
    console.log(
      `  upload   one at a time: ${rate(ROUNDS * SIZE, oneUpMs)}   ${AT_ONCE} at once: ${rate(AT_ONCE * SIZE, manyUpMs)}`,
    );
    console.log(
      `  download one at a time: ${rate(ROUNDS * SIZE, oneDownMs)}   ${AT_ONCE} at once: ${rate(AT_ONCE * SIZE, manyDownMs)}`,
    );
    console.log(
      `  RSS: idle ${idle.toFixed(0)} MiB, peak during ${AT_ONCE} uploads at once ${peak.toFixed(0)} MiB ` +
        `(+${(peak - idle).toFixed(0)} MiB; bound +64), high-water mark ${hwm?.toFixed(0) ?? '?'} MiB`,
    );
  } finally {
    await stopChild(server);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
