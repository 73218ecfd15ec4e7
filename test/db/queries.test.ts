// Tests that the checked-in SQL of every list statement (src/db/queries/, written by
// `npm run queries`) is what the code compiles today, for both dialects: a change to a tuned
// query must show in review as SQL.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { QUERIES_DIR, renderQueries } from '../../scripts/queries.js';

test('the checked-in SQL of each list statement matches the code (run `npm run queries` after a change)', () => {
  const expected = renderQueries();
  const onDisk = readdirSync(QUERIES_DIR, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  assert.deepEqual(onDisk, [...expected.keys()].sort(), 'one file per list and dialect');
  for (const [name, text] of expected) {
    assert.equal(readFileSync(join(QUERIES_DIR, name), 'utf8'), text, `${name} drifted`);
  }
});
