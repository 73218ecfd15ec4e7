// The import rules of src/ (scripts/check-imports.ts, also run by `npm run lint`): no import cycles,
// type-only and dynamic imports included, and migrations import only Kysely and their own folder.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { importProblems } from '../scripts/check-imports.js';
import { ROOT } from './root.js';

/** A throwaway source tree of `files` (path → text); removed when the test ends. */
function tree(t: { after(fn: () => void): void }, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'imports-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

test('src/ has no import cycle and its migrations import no live code', () => {
  assert.deepEqual(importProblems(join(ROOT, 'src')), []);
});

test('a cycle through value imports is reported with the files that form it', (t) => {
  const root = tree(t, {
    'a.ts': "import { b } from './b.js';\nexport const a = b;\n",
    'b.ts': "import { c } from './lib/c.js';\nexport const b = c;\n",
    'lib/c.ts': "import {\n  a,\n} from '../a.js';\nexport const c = () => a;\n",
    'd.ts': "import { a } from './a.js';\nexport const d = a;\n",
  });
  const problems = importProblems(root);
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^import cycle: a\.ts → b\.ts → lib\/c\.ts → a\.ts; files: a\.ts, b\.ts, lib\/c\.ts$/);
});

test('type-only imports, re-exports and dynamic imports close a cycle too', (t) => {
  const root = tree(t, {
    'types.ts': "export type { Thing } from './thing.js';\nexport type Id = string;\n",
    'thing.ts': "import type { Id } from './types.js';\nexport interface Thing { id: Id }\n",
    'lazy.ts': "export async function load() {\n  return (await import('./eager.js')).x;\n}\n",
    'eager.ts': "import { load } from './lazy.js';\nexport const x = load;\n",
  });
  const problems = importProblems(root);
  assert.equal(problems.length, 2);
  assert.ok(problems.some((p) => p.includes('files: thing.ts, types.ts')));
  assert.ok(problems.some((p) => p.includes('files: eager.ts, lazy.ts')));
});

test('an import quoted in a comment is not an import', (t) => {
  const root = tree(t, {
    'a.ts': "// import { b } from './b.js';\n/**\n * await import('./b.js')\n */\nexport const a = 1;\n",
    'b.ts': "import { a } from './a.js';\nexport const b = a;\n",
  });
  assert.deepEqual(importProblems(root), []);
});

test('a migration may import Kysely and its own folder, nothing else', (t) => {
  const root = tree(t, {
    'db/migrations/helpers.ts': "import type { Kysely } from 'kysely';\nexport type Db = Kysely<never>;\n",
    'db/migrations/001-a.ts': "import { sql } from 'kysely';\nimport type { Db } from './helpers.js';\n",
    'db/migrations/002-b.ts': "import { LOCK } from '../../modules/events/outbox.js';\n",
    'db/migrations/003-c.ts': "import { randomUUID } from 'node:crypto';\n",
    'modules/events/outbox.ts': 'export const LOCK = 1;\n',
  });
  assert.deepEqual(importProblems(root), [
    'db/migrations/002-b.ts imports ../../modules/events/outbox.js: a migration is frozen history and imports no live code',
    'db/migrations/003-c.ts imports node:crypto: a migration is frozen history and imports no live code',
  ]);
});
