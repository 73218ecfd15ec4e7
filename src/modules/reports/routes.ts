// Owns /reports: summary, timeseries and breakdown for admins, managers and API keys with
// `reports:read` (staff 403), as JSON or, with `Accept: text/csv`, as CSV (docs/reports.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { Executor } from '../../db/types.js';
import { ADMIN_MANAGER } from '../../lib/auth.js';
import { type FieldError, validation } from '../../lib/errors.js';
import { Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { SETTINGS } from '../settings/registry.js';
import { getSetting } from '../settings/repository.js';
import { summaryCsv, tableCsv, wantsCsv } from './csv.js';
import {
  BreakdownQuery,
  BreakdownRow,
  SeriesPoint,
  Summary,
  type SummaryInput,
  SummaryQuery,
  TimeseriesQuery,
} from './schemas.js';
import { breakdown, MAX_BUCKETS, type Period, type SeriesMetric, summary, timeseries } from './service.js';
import { isTimeZone } from './zone.js';

const DAY = 86_400_000;
const MAX_DAYS = 400;

/** The period and time zone of a report query, or a VALIDATION_ERROR naming what is wrong. */
async function periodOf(x: Executor, q: SummaryInput): Promise<{ period: Period; tz: string }> {
  const problems: FieldError[] = [];
  const to = q.to === undefined ? Date.now() : Date.parse(q.to);
  const from = q.from === undefined ? to - 7 * DAY : Date.parse(q.from);
  if (Number.isNaN(to)) problems.push({ field: 'to', message: 'must be an ISO 8601 instant' });
  if (Number.isNaN(from)) problems.push({ field: 'from', message: 'must be an ISO 8601 instant' });
  if (problems.length === 0 && from >= to) problems.push({ field: 'from', message: 'must be before to' });
  if (problems.length === 0 && to - from > MAX_DAYS * DAY) {
    problems.push({ field: 'to', message: `must be at most ${MAX_DAYS} days after from` });
  }
  let tz = q.timezone;
  if (tz !== undefined && !isTimeZone(tz))
    problems.push({ field: 'timezone', message: 'must be an IANA time zone like Europe/Lisbon' });
  if (problems.length > 0) throw validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);
  if (tz === undefined) {
    const hotel = ((await getSetting(x, 'hotel'))?.value ?? SETTINGS.hotel!.default) as { timezone: string };
    tz = hotel.timezone;
  }
  return {
    period: {
      from,
      to,
      biz: q.businessHours ?? true,
      channel: q.channel,
      assignee: q.assignee,
      department: q.department,
    },
    tz,
  };
}

const filename = (kind: string, p: Period) =>
  `report-${kind}-${new Date(p.from).toISOString().slice(0, 10)}-${new Date(p.to).toISOString().slice(0, 10)}.csv`;

function sendCsv(reply: FastifyReply, name: string, body: string) {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}"`)
    .send(body);
}

const CSV = {
  'text/csv': { schema: Type.String({ maxLength: 10_000_000, description: 'RFC 4180, a header row first' }) },
};
const answers = (data: object, description: string) => ({
  200: { description, content: { 'application/json': { schema: Ok(data as never) }, ...CSV } },
  ...STANDARD_ERRORS,
});
const DESCRIPTION =
  'Admins, managers and API keys with `reports:read`; staff get 403. Every figure is exact as soon as the write ' +
  'that changes it commits. Send `Accept: text/csv` for CSV. What each figure means: docs/reports.md.';

export const reportsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;
  const access = { access: ADMIN_MANAGER, scope: 'reports:read' } as const;

  app.get(
    '/summary',
    {
      config: access,
      schema: {
        tags: ['reports'],
        operationId: 'getReportSummary',
        summary: 'Figures of a period beside those of the period of equal length before it',
        description: DESCRIPTION,
        querystring: SummaryQuery,
        response: answers(Summary, 'The figures'),
      },
    },
    async (request, reply) => {
      const { period } = await periodOf(db(), request.query);
      const data = await summary(db(), period);
      if (wantsCsv(request.headers.accept)) return sendCsv(reply, filename('summary', period), summaryCsv(data));
      return ok(data);
    },
  );

  app.get(
    '/timeseries',
    {
      config: access,
      schema: {
        tags: ['reports'],
        operationId: 'getReportTimeseries',
        summary: 'One figure per local hour, day, ISO week or month (at most 1,000 buckets)',
        description: `${DESCRIPTION} Empty buckets are included; the counts of all buckets add up to the summary's.`,
        querystring: TimeseriesQuery,
        response: answers(Type.Array(SeriesPoint, { maxItems: MAX_BUCKETS }), 'One row per bucket'),
      },
    },
    async (request, reply) => {
      const { period, tz } = await periodOf(db(), request.query);
      const granularity = request.query.granularity ?? 'day';
      const metric = (request.query.metric ?? 'conversations_opened') as SeriesMetric;
      const data = await timeseries(db(), period, metric, granularity, tz);
      if (data === null) {
        throw validation(
          [{ field: 'granularity', message: `gives more than ${MAX_BUCKETS} buckets for this period` }],
          `granularity: gives more than ${MAX_BUCKETS} buckets for this period`,
        );
      }
      if (wantsCsv(request.headers.accept)) {
        return sendCsv(reply, filename(`${metric}-${granularity}`, period), tableCsv(data));
      }
      return ok(data);
    },
  );

  app.get(
    '/breakdown',
    {
      config: access,
      schema: {
        tags: ['reports'],
        operationId: 'getReportBreakdown',
        summary: "The summary's figures per channel, assignee or department",
        description: `${DESCRIPTION} One row per key with any figure in the period; department rows carry task figures only.`,
        querystring: BreakdownQuery,
        response: answers(Type.Array(BreakdownRow, { maxItems: 10_000 }), 'One row per key'),
      },
    },
    async (request, reply) => {
      const { period } = await periodOf(db(), request.query);
      const by = (request.query.by ?? 'channel') as 'channel' | 'assignee' | 'department';
      const data = await breakdown(db(), period, by);
      if (wantsCsv(request.headers.accept)) {
        return sendCsv(reply, filename(`by-${by}`, period), tableCsv(data as Record<string, unknown>[]));
      }
      return ok(data);
    },
  );
};
