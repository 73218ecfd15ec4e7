// Owns the row types of the report tables (migrations 025, 030, 033) and the typed view of an executor onto
// them, kept in this module so the shared table list stays as it is.
import type { Kysely } from 'kysely';
import type { Executor } from '../../db/types.js';

type Num = number | string | bigint;

export interface ReportTables {
  report_facts: {
    id?: Num;
    metric: string;
    at: Num;
    channel: string;
    assignee: string;
    department: string;
    wall: number | null;
    biz: number | null;
    ref: string | null;
  };
  report_rollups: {
    metric: string;
    channel: string;
    assignee: string;
    department: string;
    grain: number;
    start: Num;
    n: Num;
    wall: number;
    biz: number;
    /** The histograms of wall and business seconds (migration 033, src/modules/reports/histogram.ts). */
    wall_bins: Uint8Array | string | number[] | null;
    biz_bins: Uint8Array | string | number[] | null;
  };
  report_conversations: {
    id: string;
    closed: number;
    opened_at: Num;
    wait_at: Num | null;
    waited: number;
    /** The latest SLA moment reported as an event (migration 030). */
    sla_reported?: Num | null;
    /** Moments come but not reported when their target ended: JSON, null when none (migration 030). */
    sla_owed?: string | null;
  };
  report_tasks: {
    id: string;
    created_at: Num;
    deadline: Num | null;
    completed_at: Num | null;
    status: string;
    /** The deadline reported by `task.overdue` (migration 030). */
    overdue_reported?: Num | null;
  };
  conversations: {
    id: string;
    channel: string;
    assignee: string | null;
    status: string;
    sla_target: string | null;
    sla_response_due: string | null;
    sla_response_risk: string | null;
    sla_resolution_due: string | null;
    sla_resolution_risk: string | null;
    sla_breached: number | boolean;
  };
  tasks: { id: string; conversation_id: string | null; assignee: string | null; deadline: string | null };
}

export type ReportDb = Pick<Kysely<ReportTables>, 'selectFrom' | 'insertInto' | 'updateTable' | 'deleteFrom'>;

/** The executor, typed for the report tables (the same connection or transaction). */
export const rdb = (x: Executor): ReportDb => x as unknown as ReportDb;

/** A bigint column as a number (PostgreSQL returns int8 as text). */
export const num = (v: Num | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
