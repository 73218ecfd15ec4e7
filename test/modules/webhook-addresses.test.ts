// The webhook address guard (src/modules/webhooks/url-guard.ts) judges an IPv6 address that carries
// an IPv4 one (IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, 6to4 2002::/16) by the IPv4
// address it carries, whatever way it is written, and refuses the ranges that reach into a local
// network by design (local-use NAT64 64:ff9b:1::/48, Teredo) unless WEBHOOK_ALLOW_PRIVATE.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPublicAddress } from '../../src/modules/webhooks/url-guard.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

/** Each reaches a loopback, private, link-local or otherwise internal address. */
const INTERNAL = [
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '0:0:0:0:0:ffff:7f00:1',
  '0000:0000:0000:0000:0000:FFFF:0A00:0001',
  '::ffff:a9fe:a9fe', // 169.254.169.254, cloud metadata
  '::ffff:0:a00:1', // IPv4-translated 10.0.0.1
  '::ffff:0:0', // mapped 0.0.0.0
  '64:ff9b::a00:1', // NAT64 of 10.0.0.1
  '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
  '64:ff9b::192.168.1.1',
  '64:ff9b::a9fe:a9fe',
  '64:ff9b:1::1', // local-use NAT64
  '64:ff9b:1:ffff::5db8:d822',
  '2002:a00:1::1', // 6to4 of 10.0.0.1
  '2002:7f00:1::', // 6to4 of 127.0.0.1
  '2002:c0a8:101::1', // 6to4 of 192.168.1.1
  '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
  '::', // unspecified
  '::1',
  '::a00:1', // IPv4-compatible (deprecated)
  'fe80::1%eth0',
  'fd12:3456::1',
  '2001:db8::1', // documentation
  '100::1', // discard-only
  '192.0.2.10', // documentation
  '198.51.100.7',
  '203.0.113.9',
];

/** Public hosts, some of them through a translator. */
const PUBLIC = [
  '93.184.216.34',
  '2606:4700::1111',
  '::ffff:5db8:d822',
  '64:ff9b::5db8:d822', // NAT64 of 93.184.216.34 (DNS64 networks)
  '64:ff9b::93.184.216.34',
  '2002:5db8:d822::1', // 6to4 of 93.184.216.34
  '2a00:1450:4001:80b::200e',
];

test('an IPv6 address carrying an IPv4 one is judged by that IPv4 address; local-use ranges are refused', () => {
  for (const a of INTERNAL) assert.equal(isPublicAddress(a), false, a);
  for (const a of PUBLIC) assert.equal(isPublicAddress(a), true, a);
  for (const a of ['', 'example.com', '1.2.3', '::g', '1::2::3', '64:ff9b::1.2.3.400']) {
    assert.equal(isPublicAddress(a), false, `not an address: ${a}`);
  }
});

test('a webhook URL naming an internal address through NAT64, 6to4, Teredo or a mapped form is refused', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const address of INTERNAL.filter((a) => !a.includes('%') && !a.includes('.'))) {
    const url = `http://[${address}]:8080/hook`;
    const res = await call(app, 'POST', '/webhooks', { token: admin.token, body: { url, events: ['*'] } });
    assert.equal(res.status, 400, `${url}: ${res.raw.body}`);
    assert.deepEqual(
      res.body.error.details.map((d: { field: string }) => d.field),
      ['url'],
      url,
    );
  }
  const fine = await call(app, 'POST', '/webhooks', {
    token: admin.token,
    body: { url: 'http://[64:ff9b::5db8:d822]/hook', events: ['knowledge.deleted'] },
  });
  assert.equal(fine.status, 201, fine.raw.body);

  // WEBHOOK_ALLOW_PRIVATE lets every one of them through (tests, trusted networks).
  const open = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const boss = await createStaff(open, 'admin');
  const res = await call(open, 'POST', '/webhooks', {
    token: boss.token,
    body: { url: 'http://[64:ff9b::7f00:1]/hook', events: ['knowledge.deleted'] },
  });
  assert.equal(res.status, 201);
});
