// The repository's root, wherever this file runs from: the tests run compiled, from .test-build/
// (scripts/run-tests.mjs), and paths to the repository's own files (docs, sources, the CLI a test
// starts) are taken from here, not from the compiled file's place.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

function findRoot(dir: string): string {
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no package.json above the tests');
    dir = up;
  }
  return dir;
}

export const ROOT = findRoot(import.meta.dirname);
