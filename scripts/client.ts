// Keeps the typed client (clients/typescript) in step with the API: `npm run client:generate`
// writes the served OpenAPI document into the client and regenerates its types with
// openapi-typescript; `npm run client:check` does the same into a temporary copy, fails when the
// checked-in files differ (the client drifted from the server), type-checks the client and its
// examples, and installs it as an integrator would (scripts/client-install.ts). The client has its
// own package.json and TypeScript 5 (openapi-typescript needs the TypeScript compiler API, which the
// project's TypeScript 7 does not have).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { checkInstalls } from './client-install.js';

const ROOT = new URL('..', import.meta.url).pathname;
const CLIENT = join(ROOT, 'clients', 'typescript');
const SCHEMA = join('src', 'schema.ts');
const GENERATED = ['openapi.json', SCHEMA];

function run(cwd: string, args: string[]): void {
  const r = spawnSync('npm', args, { cwd, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`client: npm ${args.join(' ')} failed in ${cwd}\n`);
    process.exit(1);
  }
}

async function document(): Promise<string> {
  const app = await buildApp(
    loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: 'sqlite::memory:', JWT_SECRET: 'x'.repeat(48) }),
  );
  const doc = app.swagger();
  await app.close();
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/**
 * openapi-typescript writes a schema that contains itself (any JSON value: an array or an object of
 * JSON values) as a member of `components.schemas` naming itself through
 * `components["schemas"]["X"]`, which TypeScript refuses in a .ts file (TS2502) and leaves unchecked
 * in a .d.ts only under skipLibCheck. Each such member becomes a recursive type alias of its own,
 * which TypeScript accepts, and the member names it.
 */
export function hoistRecursiveSchemas(text: string): string {
  const lines = text.split('\n');
  const hoisted: string[] = [];
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^ {8}([A-Za-z0-9_]+): (.*)$/.exec(lines[i]!);
    if (m === null) {
      out.push(lines[i]!);
      continue;
    }
    const name = m[1]!;
    const block = [m[2]!];
    let j = i;
    if (!m[2]!.endsWith(';')) {
      while (++j < lines.length) {
        block.push(lines[j]!.slice(8));
        if (/^ {8}\S/.test(lines[j]!)) break;
      }
    }
    const self = `components["schemas"]["${name}"]`;
    if (!block.some((l) => l.includes(self))) {
      out.push(...lines.slice(i, j + 1));
      i = j;
      continue;
    }
    const alias = `Recursive${name}`;
    hoisted.push(`export type ${alias} = ${block.join('\n').replaceAll(self, alias)}`);
    out.push(`        ${name}: ${alias};`);
    i = j;
  }
  return hoisted.length === 0 ? text : `${out.join('\n').trimEnd()}\n${hoisted.join('\n')}\n`;
}

function generate(dir: string, doc: string): void {
  writeFileSync(join(dir, 'openapi.json'), doc);
  run(dir, ['run', '--silent', 'generate']);
  const file = join(dir, SCHEMA);
  writeFileSync(file, hoistRecursiveSchemas(readFileSync(file, 'utf8')));
}

if (!existsSync(join(CLIENT, 'node_modules'))) run(CLIENT, ['ci', '--no-audit', '--no-fund']);
const doc = await document();
if (process.argv.includes('--check')) {
  const copy = mkdtempSync(join(tmpdir(), 'gma-client-'));
  try {
    cpSync(CLIENT, copy, { recursive: true, filter: (src) => !src.includes(`${CLIENT}/node_modules/`) });
    rmSync(join(copy, 'node_modules'), { recursive: true, force: true });
    cpSync(join(CLIENT, 'node_modules'), join(copy, 'node_modules'), { recursive: true, verbatimSymlinks: true });
    generate(copy, doc);
    const drifted = GENERATED.filter(
      (f) => readFileSync(join(copy, f), 'utf8') !== readFileSync(join(CLIENT, f), 'utf8'),
    );
    if (drifted.length > 0) {
      process.stderr.write(`client: ${drifted.join(', ')} drifted from the server; run npm run client:generate\n`);
      process.exit(1);
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
  run(CLIENT, ['run', '--silent', 'typecheck']);
  process.stdout.write('client: generated files match the server; client and examples type-check\n');
  checkInstalls(CLIENT);
  process.stdout.write('client: packed and folder installs build, import and type-check in a strict project\n');
} else {
  generate(CLIENT, doc);
  process.stdout.write(`client: wrote ${GENERATED.map((f) => join('clients/typescript', f)).join(', ')}\n`);
}
