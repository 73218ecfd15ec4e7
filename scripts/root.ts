// The repository's root, found from this file's place by walking up to package.json: the scripts
// run from scripts/ through tsx, and compiled from .test-build/scripts/ when a test imports them.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

function findRoot(dir: string): string {
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${dir}`);
    dir = up;
  }
  return dir;
}

export const ROOT = findRoot(import.meta.dirname);
