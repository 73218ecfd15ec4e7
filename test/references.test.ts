// Comments cite the repository's own docs, never a file outside it: a reader of the repository
// alone must be able to follow every reference (docs/decisions.md, docs/integrations.md …).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './root.js';

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules' && name !== 'results') sources(path, out);
    } else if (/\.(ts|mjs)$/.test(name)) {
      out.push(path);
    }
  }
  return out;
}

// Built from parts so this file does not name what it looks for.
const OUTSIDE = new RegExp(
  [
    ['CON', 'TRACT'],
    ['\\.\\./sha', 'red/'],
    ['STY', 'LE\\.md'],
    ['/wo', 'rk/'],
  ]
    .map((p) => p.join(''))
    .join('|'),
);

test('no file under src, test, bench or scripts cites a file outside the repository', () => {
  const found: string[] = [];
  for (const dir of ['src', 'test', 'bench', 'scripts']) {
    for (const file of sources(join(ROOT, dir))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (OUTSIDE.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  assert.deepEqual(found, []);
});
