// Secrets a provider sends (Meta's verify token, the inbound e-mail password) are compared in
// constant time whatever their lengths: as SHA-256 digests, so a guess of another length is simply
// unequal and the comparison never throws or returns early (src/modules/channels/signatures.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactUrl } from '../../src/lib/request-logger.js';
import { same } from '../../src/modules/channels/signatures.js';

test('a secret equals only itself, whatever the length of the guess', () => {
  assert.equal(same('verify-token', 'verify-token'), true);
  assert.equal(same('ünïcode ✓', 'ünïcode ✓'), true);
  for (const guess of ['', 'v', 'verify-toke', 'verify-tokeN', 'verify-token ', 'x'.repeat(10_000)]) {
    assert.equal(same(guess, 'verify-token'), false, JSON.stringify(guess.slice(0, 20)));
  }
});

test('a logged URL keeps its query but not the values of secret parameters', () => {
  assert.equal(redactUrl('/api/v1/guests?page=2&limit=5'), '/api/v1/guests?page=2&limit=5');
  assert.equal(
    redactUrl('/w?hub.mode=subscribe&hub.verify_token=abc&hub.challenge=1'),
    '/w?hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=1',
  );
  assert.equal(redactUrl('/w?HUB%2EVERIFY_TOKEN=abc'), '/w?HUB%2EVERIFY_TOKEN=[redacted]');
  assert.equal(redactUrl('/x?token&access_token=a=b&%zz=1'), '/x?token=[redacted]&access_token=[redacted]&%zz=1');
});
