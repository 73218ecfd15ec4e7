// Owns moving each rollup row's histogram into the row itself (docs/reports.md, "How it is kept"):
// report_rollups gains wall_bins and biz_bins, the counts per bin of its wall and business seconds,
// and report_bins (one row per rollup row and bin) goes, so a report reads one row per piece of
// its range rather than one per piece and bin. On PostgreSQL the histogram is an int4[] indexed by
// bin, added to by `report_hist_add` (created here) and built from rows by `report_hist_sum`; on
// SQLite a blob of (bin uint16, count int32) entries sorted by bin, whose functions the connection
// registers (src/modules/reports/histogram.ts). Existing figures are carried over as they are.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

/** The figures with a duration when this migration was written: only they have bins. */
const TIMED = ['first_response', 'reply_time', 'resolution', 'task_completed'];
const KEY = ['metric', 'channel', 'assignee', 'department', 'grain', 'start'];

export const reportHistograms: MigrationDef = {
  name: '033-report-histograms',
  async up(db, t) {
    const timed = sql.join(TIMED.map((m) => sql.lit(m)));
    if (t.dialect === 'postgres') {
      await sql`create or replace function report_hist_add(a int4[], b int4[]) returns int4[]
        language plpgsql immutable as $$
        declare i int;
        begin
          if b is null or cardinality(b) = 0 then return a; end if;
          if a is null or cardinality(a) = 0 then return b; end if;
          for i in array_lower(b, 1)..array_upper(b, 1) loop
            if b[i] <> 0 then a[i] := coalesce(a[i], 0) + b[i]; end if;
          end loop;
          return a;
        end $$`.execute(db);
      await sql`create or replace function report_hist_step(a int4[], bin int, n bigint) returns int4[]
        language plpgsql immutable as $$
        begin
          if bin is null or n = 0 then return a; end if;
          if a is null then a := '{}'; end if;
          a[bin] := coalesce(a[bin], 0) + n;
          return a;
        end $$`.execute(db);
      await sql`create aggregate report_hist_sum(int, bigint) (sfunc = report_hist_step, stype = int4[])`.execute(db);
      for (const column of ['wall_bins', 'biz_bins']) {
        await db.schema.alterTable('report_rollups').addColumn(column, sql`int4[]`).execute();
      }
      const on = sql.join(
        KEY.map((k) => sql`r.${sql.ref(k)} = h.${sql.ref(k)}`),
        sql` and `,
      );
      await sql`update report_rollups r set wall_bins = h.w, biz_bins = h.b
        from (select metric, channel, assignee, department, grain, start,
                report_hist_sum(case when biz = 0 then bin end, n) as w,
                report_hist_sum(case when biz = 1 then bin end, n) as b
              from report_bins group by metric, channel, assignee, department, grain, start) h
        where ${on}`.execute(db);
    } else {
      for (const column of ['wall_bins', 'biz_bins']) {
        await db.schema.alterTable('report_rollups').addColumn(column, 'blob').execute();
      }
      // Built in SQL (no function of the connection's): each entry is printf'd as 12 hex digits.
      const of = (biz: number) => sql`(select unhex(group_concat(printf('%04X%08X', b.bin, b.n), '' order by b.bin))
        from report_bins b where b.biz = ${sql.lit(biz)} and b.n > 0
        and ${sql.join(
          KEY.map((k) => sql`b.${sql.ref(k)} = report_rollups.${sql.ref(k)}`),
          sql` and `,
        )})`;
      await sql`update report_rollups set wall_bins = ${of(0)}, biz_bins = ${of(1)} where metric in (${timed})`.execute(
        db,
      );
    }
    await db.schema.dropTable('report_bins').execute();
  },
};
