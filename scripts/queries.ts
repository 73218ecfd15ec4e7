// Writes the SQL every list statement sends, per dialect, into src/db/queries/<dialect>/<list>.sql,
// so a change to a tuned query shows in review as SQL (as immich checks in its queries); run with
// `npm run queries`. test/db/queries.test.ts fails when the files differ from what the code compiles.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { type DialectName, type Executor, executor } from '../src/db/executor.js';
import type { Database } from '../src/db/types.js';
import { listApiKeys } from '../src/modules/api-keys/repository.js';
import { listAudit } from '../src/modules/audit/repository.js';
import { byShortcode, cannedBestFirst } from '../src/modules/canned-responses/repository.js';
import { labelPages } from '../src/modules/conversations/label-lists.js';
import { listMessages } from '../src/modules/conversations/messages-repository.js';
import { listConversations } from '../src/modules/conversations/repository.js';
import {
  guestPages,
  lookupPages,
  staffGuestPages,
  staffSearchPages,
  tagGuestPages,
} from '../src/modules/guests/repository.js';
import { bestFirst, byTitle } from '../src/modules/knowledge/repository.js';
import { listStaff } from '../src/modules/staff/repository.js';
import { listStays } from '../src/modules/stays/repository.js';
import { listTasks } from '../src/modules/tasks/repository.js';
import { listDeliveries } from '../src/modules/webhooks/deliveries-repository.js';
import { listWebhooks } from '../src/modules/webhooks/repository.js';
import { ROOT } from './root.js';

export const QUERIES_DIR = join(ROOT, 'src', 'db', 'queries');

interface Pages<F> {
  spec: { name: string; ranked?: boolean };
  statementsOf(f: F): Record<string, { sql(x: Executor): string }>;
}

/** Each list with the filter shapes worth reviewing: none, each filter alone, and all together. */
const CATALOG: [Pages<never>, unknown[]][] = [
  [
    listConversations as never,
    [
      {},
      { status: 'open' },
      { channel: 'web' },
      { assignee: 'stf' },
      { assignee: null },
      { onlyAssignee: 'stf' },
      { status: 'open', channel: 'web', assignee: 'stf', onlyAssignee: 'stf' },
    ],
  ],
  [
    labelPages as never,
    [
      { labels: ['vip'] },
      { labels: ['vip'], status: 'open', channel: 'web', assignee: 'stf', onlyAssignee: 'stf' },
      { labels: ['vip'], assignee: null },
    ],
  ],
  [listMessages as never, [{ conversationId: 'cnv' }]],
  [
    listTasks as never,
    [{}, { status: 'open' }, { priority: 'high' }, { department: 'd' }, { assignee: 'unassigned' }, { owner: 'stf' }],
  ],
  [
    guestPages as never,
    [
      { mode: null },
      { mode: { by: 'scan', pattern: '%a%' } },
      { mode: { by: 'index', pattern: '%abc%' } },
      { mode: { by: 'scan', pattern: '%abc%', indexed: '%abc%' } },
    ],
  ],
  [
    staffGuestPages as never,
    [
      { mode: null, assignee: 'stf' },
      { mode: { by: 'scan', pattern: '%a%' }, assignee: 'stf' },
    ],
  ],
  [staffSearchPages as never, [{ mode: { by: 'index', pattern: '%abc%' }, assignee: 'stf' }]],
  [
    tagGuestPages as never,
    [
      { mode: null, tag: 'vip' },
      { mode: { by: 'index', pattern: '%abc%' }, tag: 'vip' },
      { mode: null, tag: 'vip', assignee: 'stf' },
      { mode: { by: 'index', pattern: '%abc%' }, tag: 'vip', assignee: 'stf' },
    ],
  ],
  [
    lookupPages as never,
    [{ email: 'e' }, { externalRef: 'r' }, { phone: 'p', tag: 't', assignee: 'stf', pattern: '%a%' }],
  ],
  [
    listStays as never,
    [
      {},
      { guestId: 'gst' },
      { status: 'booked' },
      { room: '1' },
      { externalRef: 'r' },
      { checkInFrom: 'd', checkInTo: 'd' },
      { on: 'd' },
      { on: 'd', owner: 'stf' },
    ],
  ],
  [byTitle as never, [{}, { category: 'c' }]],
  [bestFirst as never, [{ tokens: ['spa', 'hours'] }, { tokens: ['spa'], category: 'c' }]],
  [listStaff as never, [{}, { role: 'staff', department: 'd', active: true, onlyId: 'stf' }]],
  [byShortcode as never, [{}]],
  [cannedBestFirst as never, [{ tokens: ['late', 'checkout'] }]],
  [listWebhooks as never, [{}]],
  [listApiKeys as never, [{}]],
  [listAudit as never, [{}, { action: 'auth.login' }, { actor: 'stf', action: 'auth.login', from: 't', to: 't' }]],
  [listDeliveries as never, [{ webhookId: 'whk' }, { webhookId: 'whk', status: 'failed' }]],
];

/** An executor that compiles for `dialect` and never connects. */
function compiler(dialect: DialectName): Executor {
  const db =
    dialect === 'sqlite'
      ? new Kysely<Database>({ dialect: new SqliteDialect({ database: {} as never }) })
      : new Kysely<Database>({ dialect: new PostgresDialect({ pool: {} as never }) });
  return executor(db, dialect, () => {
    throw new Error('compile only');
  });
}

/** The file contents per `<dialect>/<list>.sql`. */
export function renderQueries(): Map<string, string> {
  const files = new Map<string, string>();
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const x = compiler(dialect);
    for (const [pages, filters] of CATALOG) {
      const out = [`-- Generated by \`npm run queries\` (scripts/queries.ts): the SQL of the ${pages.spec.name} list.`];
      for (const f of filters) {
        for (const [what, q] of Object.entries(pages.statementsOf(f as never))) {
          if (pages.spec.ranked && (what === 'deep' || what === 'after')) continue;
          out.push('', `-- ${JSON.stringify(f)}: ${what}`, `${q.sql(x)};`);
        }
      }
      files.set(`${dialect}/${pages.spec.name}.sql`, `${out.join('\n')}\n`);
    }
  }
  return files;
}

// Run as a script (not imported: bundled into a test, this module shares the test file's URL).
if (/[\\/]queries\.[jt]s$/.test(process.argv[1] ?? '')) {
  for (const [name, text] of renderQueries()) {
    const path = join(QUERIES_DIR, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  process.stdout.write(`Wrote ${QUERIES_DIR}\n`);
}
