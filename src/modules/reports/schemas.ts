// Owns the request and response schemas of /reports (docs/reports.md).
import { type Static, type TSchema, Type } from 'typebox';
import { Nullable, RefIdInput } from '../../lib/schemas.js';
import { Channel } from '../conversations/schemas.js';
import { DepartmentFilter } from '../settings/registry.js';
import { SERIES_METRICS } from './service.js';

const Count = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });
const Stamp = (description?: string) => Type.String({ format: 'date-time', maxLength: 30, description });

const Instant = (description: string) => Type.String({ format: 'date-time', maxLength: 64, description });

export const ReportQuery = {
  from: Type.Optional(Instant('Start of the period, included (ISO 8601 instant). Default: 7 days before `to`.')),
  to: Type.Optional(Instant('End of the period, excluded (ISO 8601 instant). Default: now.')),
  channel: Type.Optional({ ...Channel, description: 'Only this channel (task figures: their conversation’s channel)' }),
  assignee: Type.Optional(RefIdInput('stf', 'Only figures belonging to this staff member (docs/reports.md)')),
  department: Type.Optional({
    ...DepartmentFilter,
    description: 'Only tasks of this department (conversation figures are not filtered)',
  }),
  businessHours: Type.Optional(
    Type.Boolean({
      description: 'Count only time inside the `business_hours` setting (true, the default), or wall time (false)',
    }),
  ),
  timezone: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: "IANA time zone placing bucket boundaries; default the `hotel` setting's",
      examples: ['Europe/Lisbon'],
    }),
  ),
};

export const SummaryQuery = Type.Object(ReportQuery, { additionalProperties: false });
export const TimeseriesQuery = Type.Object(
  {
    ...ReportQuery,
    metric: Type.Optional(
      Type.Enum(Object.keys(SERIES_METRICS), {
        description: 'The figure to follow; default conversations_opened',
        examples: ['reply_time'],
      }),
    ),
    granularity: Type.Optional(
      Type.Enum(['hour', 'day', 'week', 'month'], {
        description: 'Local hours, days, ISO weeks (from Monday) or months in `timezone`; default day',
      }),
    ),
  },
  { additionalProperties: false },
);
export const BreakdownQuery = Type.Object(
  {
    ...ReportQuery,
    by: Type.Optional(
      Type.Enum(['channel', 'assignee', 'department'], {
        description: 'One row per value of it; default channel',
        examples: ['channel'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type SummaryInput = Static<typeof SummaryQuery>;

const Seconds = (what: string) => Nullable(Type.Number({ minimum: 0, maximum: 1e12, description: what }));
export const Stat = Type.Object(
  {
    count: Count('How many measures ended in the period'),
    avgSeconds: Seconds('Their mean (exact); null when count is 0'),
    medianSeconds: Seconds('Their median (within 5 % or 1 s); null when count is 0'),
    p90Seconds: Seconds('90 % took at most this long (within 5 % or 1 s); null when count is 0'),
  },
  { additionalProperties: false },
);
export const Hits = Type.Object(
  {
    met: Count('Targets met, counted at the reply, close or completion'),
    breached: Count('Targets missed, counted at their due moment'),
  },
  { additionalProperties: false },
);

const TaskFigures = Type.Object(
  {
    created: Count('Tasks created'),
    completed: Count('Tasks completed'),
    overdue: Count('Tasks whose deadline passed before completion (counted at the deadline)'),
    completion: Stat,
  },
  { additionalProperties: false },
);
const conversationFigures = {
  conversations: Type.Object(
    { opened: Count('Conversations created or reopened from closed'), resolved: Count('Closes') },
    { additionalProperties: false },
  ),
  messages: Type.Object(
    {
      inbound: Count('Texts from guests'),
      outbound: Count('Texts to guests, auto-replies included (notes never)'),
    },
    { additionalProperties: false },
  ),
  firstResponse: Stat,
  replyTime: Stat,
  resolution: Stat,
  tasks: TaskFigures,
  sla: Type.Object(
    {
      firstResponse: Hits,
      nextResponse: Hits,
      resolution: Hits,
      tasks: Hits,
    },
    { additionalProperties: false },
  ),
};
const periodHead = {
  from: Stamp('Start of the period, included'),
  to: Stamp('End of the period, excluded'),
  businessHours: Type.Boolean(),
};

export const Summary = Type.Object(
  {
    ...periodHead,
    ...conversationFigures,
    previous: Type.Object({ ...periodHead, ...conversationFigures }, { additionalProperties: false }),
  },
  { $id: 'ReportSummary', additionalProperties: false },
);

export const SeriesPoint = Type.Object(
  {
    start: Stamp('Where the bucket begins (the first: `from`)'),
    count: Count('The figure in the bucket'),
    avgSeconds: Seconds('Time metrics only'),
    medianSeconds: Seconds('Time metrics only'),
  },
  { $id: 'ReportSeriesPoint', additionalProperties: false },
);

const partial = Object.fromEntries(
  Object.entries(conversationFigures).map(([k, v]) => [k, Type.Optional(v as TSchema)]),
);
export const BreakdownRow = Type.Object(
  {
    key: Nullable(
      Type.String({ maxLength: 64, description: 'The channel, staff id or department; null: no assignee' }),
    ),
    ...partial,
    tasks: TaskFigures,
    sla: Type.Object(
      {
        firstResponse: Type.Optional(Hits),
        nextResponse: Type.Optional(Hits),
        resolution: Type.Optional(Hits),
        tasks: Hits,
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'ReportBreakdownRow', additionalProperties: false },
);
