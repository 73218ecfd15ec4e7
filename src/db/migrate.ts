// Owns applying migrations: one ordered list, run at start and by the CLI, on either store.
import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import { initial } from './migrations/001-initial.js';
import { listCounts } from './migrations/002-list-counts.js';
import { events } from './migrations/003-events.js';
import { guestSearch } from './migrations/004-guest-search.js';
import { assigneeGuestIndexes } from './migrations/005-assignee-guest-indexes.js';
import { channels } from './migrations/006-channels.js';
import { apiKeys } from './migrations/007-api-keys.js';
import { idempotency } from './migrations/008-idempotency.js';
import { auditLog } from './migrations/009-audit-log.js';
import { finishedSends } from './migrations/010-finished-sends.js';
import { staffGuests } from './migrations/011-staff-guests.js';
import { tagOrder } from './migrations/012-tag-order.js';
import { countSlots } from './migrations/013-count-slots.js';
import { staffTagCounts } from './migrations/014-staff-tag-counts.js';
import { claimSends } from './migrations/015-claim-sends.js';
import { writeEventsFunction } from './migrations/016-write-events.js';
import { webhookFanOut } from './migrations/017-webhook-fan-out.js';
import { webhookOwner } from './migrations/018-webhook-owner.js';
import { sendGuarantees } from './migrations/020-send-guarantees.js';
import { streamTickets } from './migrations/022-stream-tickets.js';
import { webVisitors } from './migrations/023-web-visitors.js';
import { jobs } from './migrations/024-jobs.js';
import { reports } from './migrations/025-reports.js';
import { stays } from './migrations/026-stays.js';
import { attachments } from './migrations/027-attachments.js';
import { productivity } from './migrations/028-productivity.js';
import { messageSearch } from './migrations/029-message-search.js';
import { slaEvents } from './migrations/030-sla-events.js';
import { journeySteps } from './migrations/031-journey-steps.js';
import { deferredCounts } from './migrations/032-deferred-counts.js';
import { reportHistograms } from './migrations/033-report-histograms.js';
import { searchScope } from './migrations/034-search-scope.js';
import { searchWalks } from './migrations/035-search-walks.js';
import { claims } from './migrations/036-claims.js';
import { columnTypes, type MigrationDef } from './migrations/helpers.js';
import type { Store } from './store.js';
import type { Db } from './types.js';

const MIGRATIONS: MigrationDef[] = [
  initial,
  listCounts,
  events,
  guestSearch,
  assigneeGuestIndexes,
  channels,
  apiKeys,
  idempotency,
  auditLog,
  finishedSends,
  staffGuests,
  tagOrder,
  countSlots,
  staffTagCounts,
  claimSends,
  writeEventsFunction,
  webhookFanOut,
  webhookOwner,
  sendGuarantees,
  streamTickets,
  webVisitors,
  jobs,
  reports,
  stays,
  attachments,
  productivity,
  messageSearch,
  slaEvents,
  journeySteps,
  deferredCounts,
  reportHistograms,
  searchScope,
  searchWalks,
  claims,
];

export async function migrate(store: Store): Promise<string[]> {
  // A migration may fill a new column or build an index over every row of a large store: minutes,
  // more than the request timeouts allow.
  return store.maintenance((db) => migrateOn(store, db));
}

async function migrateOn(store: Store, db: Db): Promise<string[]> {
  const t = columnTypes(store.dialect);
  const provider: MigrationProvider = {
    async getMigrations() {
      const out: Record<string, Migration> = {};
      for (const m of MIGRATIONS) out[m.name] = { up: (db) => m.up(db, t) };
      return out;
    },
  };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  // Kysely has no cross-process migration lock on SQLite: processes opening one fresh file at
  // once would race on CREATE TABLE. A write transaction taken first makes them queue (busy_timeout);
  // the later ones then find every migration applied. PostgreSQL uses Kysely's own lock.
  const exclusive = store.dialect === 'sqlite';
  if (exclusive) await sql`begin immediate`.execute(db);
  let outcome: Awaited<ReturnType<Migrator['migrateToLatest']>>;
  try {
    outcome = await migrator.migrateToLatest();
  } catch (err) {
    if (exclusive) await sql`rollback`.execute(db);
    throw err;
  }
  const { error, results } = outcome;
  if (exclusive) await sql.raw(error ? 'rollback' : 'commit').execute(db);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
