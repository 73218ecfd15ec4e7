// The repository's root, wherever this file runs from: the tests run compiled, from .test-build/
// (scripts/run-tests.mjs), and paths to the repository's own files (docs, sources, the CLI a test
// starts) are taken from here, not from the compiled file's place.
import { join } from 'node:path';
import { ROOT } from '../scripts/root.js';

export { ROOT };

/** Whether these tests run compiled (from .test-build/, as scripts/run-tests.mjs runs them). */
const COMPILED = import.meta.dirname.split(/[\\/]/).some((part) => part.startsWith('.test-build'));

/**
 * Node's arguments to run `script` (a .ts path from the root, such as src/server.ts) in a child
 * process: its compiled file when the tests run compiled (no TypeScript loader to start in every
 * server a test spawns), else the source through tsx.
 */
export function nodeArgs(script: string): string[] {
  if (!COMPILED) return ['--import', 'tsx', script];
  return [
    '--enable-source-maps',
    join(ROOT, process.env.TEST_BUILD_DIR ?? '.test-build', script.replace(/\.ts$/, '.js')),
  ];
}
