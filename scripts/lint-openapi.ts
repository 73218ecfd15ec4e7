// Contract lint: writes the OpenAPI document the app generates to a temporary file, then runs
// Spectral (OWASP API Security ruleset, .spectral.yaml) and Redocly (redocly.yaml) over it.
// Usage: npm run lint:openapi [-- --keep]  (--keep leaves the document in place and prints its path)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const ROOT = new URL('..', import.meta.url).pathname;
const BIN = join(ROOT, 'node_modules', '.bin');

const app = await buildApp(
  loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: 'sqlite::memory:', JWT_SECRET: 'x'.repeat(48) }),
);
const doc = app.swagger();
await app.close();

const dir = mkdtempSync(join(tmpdir(), 'gma-openapi-'));
const file = join(dir, 'openapi.json');
writeFileSync(file, JSON.stringify(doc, null, 2));

// No network: Redocly sends neither telemetry nor an update check.
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
const run = (cmd: string, args: string[]) => {
  process.stdout.write(`\n== ${cmd} ${args.join(' ')}\n`);
  return spawnSync(join(BIN, cmd), args, { cwd: ROOT, stdio: 'inherit', env }).status ?? 1;
};

const spectral = run('spectral', ['lint', '--ruleset', join(ROOT, '.spectral.yaml'), '--fail-severity', 'error', file]);
const redocly = run('redocly', ['lint', '--config', join(ROOT, 'redocly.yaml'), file]);

if (process.argv.includes('--keep')) process.stdout.write(`\nDocument kept at ${file}\n`);
else rmSync(dir, { recursive: true, force: true });
const failed = [spectral !== 0 && 'spectral', redocly !== 0 && 'redocly'].filter(Boolean);
if (failed.length > 0) {
  process.stderr.write(`\nOpenAPI lint failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
process.stdout.write('\nOpenAPI lint: 0 errors\n');
