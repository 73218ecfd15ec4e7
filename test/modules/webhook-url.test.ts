// A webhook URL the document's pattern admits is one the server takes (a fuzzer once built
// URLs from the pattern that the server's own URL check refused, control characters among them).
import assert from 'node:assert/strict';
import test from 'node:test';
import { urlProblem } from '../../src/modules/webhooks/url-guard.js';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

/** The `url` pattern of POST /webhooks as the served document states it. */
async function documentedPattern(t: test.TestContext): Promise<RegExp> {
  const app = await buildTestApp(t);
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body;
  const body = doc.paths['/api/v1/webhooks'].post.requestBody.content['application/json'].schema;
  return new RegExp(body.properties.url.pattern, 'u');
}

test('every webhook URL the documented pattern admits passes the server URL check', async (t) => {
  const pattern = await documentedPattern(t);
  const urls: string[] = [];
  // Each character of the first planes in the host, the path, the query and the fragment.
  for (let c = 0; c < 0x3000; c++) {
    const ch = String.fromCodePoint(c);
    urls.push(`https://a${ch}b.example.com/x`, `https://a.example.com/x${ch}`, `https://a.example.com/?q=${ch}`);
    urls.push(`https://a.example.com/#${ch}`, `https://${ch}/`);
  }
  // Hosts the URL parser reads as numbers or addresses, and ports.
  for (const host of [
    'a.123',
    'a.0x1f',
    'a.09',
    'a.0x',
    '999.1.1.1',
    '1.2.3.4',
    'a.1e3',
    '[::1]',
    '[zz]',
    'xn--bcher-kva.example',
  ]) {
    urls.push(`http://${host}/`, `http://${host}:8080/`, `http://${host}:65535/`, `http://${host}:65536/`);
  }
  const admittedButRefused: string[] = [];
  let admitted = 0;
  for (const url of urls) {
    if (!pattern.test(url)) continue;
    admitted++;
    const problem = await urlProblem(url, true);
    if (problem !== null) admittedButRefused.push(`${JSON.stringify(url)}: ${problem}`);
  }
  assert.ok(admitted > 1000, `the pattern admitted only ${admitted} URLs`);
  assert.deepEqual(admittedButRefused, []);
  for (const ok of [
    'https://hooks.example.com/guest-messaging',
    'HTTP://127.0.0.1:9/x',
    'https://[::1]:8443/h?a=1#b',
  ]) {
    assert.ok(pattern.test(ok), ok);
  }
});

test('a webhook URL with a control character is refused with a field error, not the URL parser words', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  for (const url of [
    'https://a\u0001b.example.com/x',
    'https://a.example.com/x\u007f',
    'https://a\u0085b.example.com/',
  ]) {
    const res = await call(app, 'POST', '/webhooks', { token: admin.token, body: { url, events: ['*'] } });
    assertError(res, 400, 'VALIDATION_ERROR', url);
    assert.deepEqual(
      res.body.error.details.map((d: { field: string }) => d.field),
      ['url'],
    );
    assert.match(res.body.error.details[0].message, /control characters/);
  }
});
