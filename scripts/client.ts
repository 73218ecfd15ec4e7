// Keeps the typed client (clients/typescript) in step with the API: `npm run client:generate`
// writes the served OpenAPI document into the client and regenerates its types with
// openapi-typescript; `npm run client:check` does the same into a temporary copy, fails when the
// checked-in files differ (the client drifted from the server), and type-checks the client and its
// examples. The client has its own package.json and TypeScript 5 (openapi-typescript needs the
// TypeScript compiler API, which the project's TypeScript 7 does not have).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const ROOT = new URL('..', import.meta.url).pathname;
const CLIENT = join(ROOT, 'clients', 'typescript');
const GENERATED = ['openapi.json', join('src', 'schema.d.ts')];

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

function generate(dir: string, doc: string): void {
  writeFileSync(join(dir, 'openapi.json'), doc);
  run(dir, ['run', '--silent', 'generate']);
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
} else {
  generate(CLIENT, doc);
  process.stdout.write(`client: wrote ${GENERATED.map((f) => join('clients/typescript', f)).join(', ')}\n`);
}
