// Installs the typed client the two ways its README gives, into a fresh project as strict as an
// integrator's may be (`strict`, `skipLibCheck: false`): the tarball `npm pack` makes, and the
// folder itself (after `npm install` inside it, which builds it). Each install must import at run
// time, type-check a correct use, and refuse two wrong ones (a query value outside its enum, an
// unknown body field) with the type errors they deserve, so a package that ships without its types
// (every path then collapses to `never` or `any`) fails here.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;

const GOOD = `import { ApiError, createGuestApi, type Schemas, unwrap, verifyWebhook } from '@guest-messaging/client';

const client = createGuestApi({ baseUrl: 'http://127.0.0.1:3000' });

export async function sync(): Promise<Schemas['Guest']> {
  const open = unwrap(await client.api.GET('/api/v1/conversations', { params: { query: { status: 'open', limit: 20 } } }));
  const ids: string[] = open.map((c) => c.id);
  if (ids.length > 100) throw new ApiError(500, 'INTERNAL_ERROR', 'unexpected', undefined, null);
  for await (const task of client.items('/api/v1/tasks', { query: { status: 'open' } })) console.log(task.title);
  return unwrap(await client.api.POST('/api/v1/guests', { body: { name: 'Ana Lopes', tags: ['vip'] } }));
}

export const verified: boolean = verifyWebhook('secret', {}, '{}');
`;

/** Wrong uses and the TypeScript error each must give. */
const BAD: Record<string, { code: string; source: string }> = {
  'bad-query.ts': {
    code: 'TS2322',
    source: `import { createGuestApi } from '@guest-messaging/client';
const client = createGuestApi({ baseUrl: 'http://127.0.0.1:3000' });
await client.api.GET('/api/v1/conversations', { params: { query: { status: 'archived' } } });
`,
  },
  'bad-body.ts': {
    code: 'TS2353',
    source: `import { createGuestApi } from '@guest-messaging/client';
const client = createGuestApi({ baseUrl: 'http://127.0.0.1:3000' });
await client.api.POST('/api/v1/guests', { body: { name: 'Ana Lopes', vip: true } });
`,
  },
};

function sh(cwd: string, command: string, args: string[]) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function must(cond: boolean, message: string, output = ''): void {
  if (cond) return;
  process.stderr.write(`client install: ${message}\n${output}\n`);
  process.exit(1);
}

function checkProject(client: string, source: string, label: string, work: string): void {
  const dir = join(work, label);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`);
  const typesNode = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
  ).devDependencies['@types/node']!;
  const installed = sh(dir, 'npm', [
    'install',
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
    source,
    `@types/node@${typesNode}`,
  ]);
  must(installed.status === 0, `${label}: npm install ${source} failed`, installed.output);
  const imported = sh(dir, process.execPath, [
    '--input-type=module',
    '-e',
    "const m = await import('@guest-messaging/client'); if (typeof m.createGuestApi !== 'function') process.exit(3);",
  ]);
  must(imported.status === 0, `${label}: the installed client does not import`, imported.output);
  // One compiler run over the three files (each run costs seconds): the correct one must draw no
  // error, each wrong one its own.
  writeFileSync(join(dir, 'good.ts'), GOOD);
  for (const [file, { source: text }] of Object.entries(BAD)) writeFileSync(join(dir, file), text);
  const tsc = sh(dir, process.execPath, [
    join(client, 'node_modules', 'typescript', 'bin', 'tsc'),
    '--noEmit',
    '--strict',
    '--skipLibCheck',
    'false',
    '--target',
    'es2022',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--types',
    'node',
    'good.ts',
    ...Object.keys(BAD),
  ]);
  const errorsOf = (file: string) => tsc.output.split('\n').filter((l) => l.startsWith(`${file}(`));
  must(errorsOf('good.ts').length === 0, `${label}: a correct use does not type-check`, tsc.output);
  for (const [file, { code }] of Object.entries(BAD)) {
    must(
      errorsOf(file).some((l) => l.includes(code)),
      `${label}: ${file} must fail with ${code}`,
      tsc.output,
    );
  }
  const others = tsc.output
    .split('\n')
    .filter((l) => /error TS/.test(l) && !Object.keys(BAD).some((f) => l.startsWith(`${f}(`)));
  must(others.length === 0, `${label}: errors outside the wrong uses`, tsc.output);
}

/** Packs the client and installs it both ways; exits 1 naming what failed. */
export function checkInstalls(client: string): void {
  const work = mkdtempSync(join(tmpdir(), 'gma-client-install-'));
  try {
    const packed = sh(client, 'npm', ['pack', '--silent', '--pack-destination', work]);
    must(packed.status === 0, 'npm pack failed', packed.output);
    const tarball = join(work, packed.output.trim().split('\n').at(-1)!);
    checkProject(client, tarball, 'packed', work);
    checkProject(client, client, 'folder', work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
