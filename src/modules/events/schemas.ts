// Owns the event vocabulary: every event type, the event as the feed, the stream and webhooks
// show it, and the feed's query and answer.
import { type Static, Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { exampleId, Nullable, RefId } from '../../lib/schemas.js';

/** Types a write path emits; webhooks may subscribe to any of them (or "*"). */
export const EVENT_TYPES = [
  'conversation.created',
  'conversation.updated',
  'conversation.assigned',
  'conversation.status_changed',
  'message.created',
  'message.updated',
  'guest.created',
  'guest.updated',
  'guest.erased',
  'task.created',
  'task.updated',
  'task.completed',
  'task.overdue',
  'sla.at_risk',
  'sla.breached',
  'stay.created',
  'stay.updated',
  'journey.step_done',
  'journey.step_skipped',
  'knowledge.created',
  'knowledge.updated',
  'knowledge.deleted',
  'staff.created',
  'staff.updated',
  'setting.updated',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.disabled',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The record each event type carries as `data` (a component of the OpenAPI document). */
export const EVENT_DATA: Record<EventType, string> = {
  'conversation.created': 'Conversation',
  'conversation.updated': 'Conversation',
  'conversation.assigned': 'Conversation',
  'conversation.status_changed': 'Conversation',
  'message.created': 'Message',
  'message.updated': 'Message',
  'guest.created': 'Guest',
  'guest.updated': 'Guest',
  'guest.erased': 'Guest',
  'task.created': 'Task',
  'task.updated': 'Task',
  'task.completed': 'Task',
  'task.overdue': 'TaskOverdue',
  'sla.at_risk': 'SlaMoment',
  'sla.breached': 'SlaMoment',
  'stay.created': 'Stay',
  'stay.updated': 'Stay',
  'journey.step_done': 'JourneyStep',
  'journey.step_skipped': 'JourneyStep',
  'knowledge.created': 'KnowledgeEntry',
  'knowledge.updated': 'KnowledgeEntry',
  'knowledge.deleted': 'KnowledgeEntry',
  'staff.created': 'Staff',
  'staff.updated': 'Staff',
  'setting.updated': 'Setting',
  'webhook.created': 'Webhook',
  'webhook.updated': 'Webhook',
  'webhook.deleted': 'Webhook',
  'webhook.disabled': 'Webhook',
  'webhook.test': 'Webhook',
};

/** The records of the events that carry no API resource (the SLA events: docs/reports.md). */
export const EVENT_RECORDS = {
  SlaMoment: Type.Object(
    {
      conversationId: RefId(['cnv'], 'The conversation'),
      target: Type.Enum(['first_response', 'next_response', 'resolution']),
      dueAt: Type.String({ format: 'date-time', maxLength: 30, description: 'When the target is due' }),
    },
    {
      description: 'A service-level target at risk (80 % of its time gone) or breached (its due moment passed)',
      examples: [{ conversationId: exampleId('cnv'), target: 'first_response', dueAt: EXAMPLE_TIME }],
    },
  ),
  TaskOverdue: Type.Object(
    {
      taskId: RefId(['tsk'], 'The task'),
      deadline: Type.String({ format: 'date-time', maxLength: 30, description: 'The deadline that passed' }),
    },
    {
      description: 'A task whose deadline passed before it was completed',
      examples: [{ taskId: exampleId('tsk'), deadline: EXAMPLE_TIME }],
    },
  ),
};

export const isEventType = (s: string): s is EventType => (EVENT_TYPES as readonly string[]).includes(s);

/**
 * Event ids are decimal strings of an integer that only grows: the feed cursor. At most 15 digits,
 * so every cursor is exact as a JavaScript number (a quadrillion events is out of reach).
 */
export const CURSOR_PATTERN = '^(0|[1-9][0-9]{0,14})$';
export const Cursor = Type.String({
  pattern: CURSOR_PATTERN,
  'x-pattern-message': 'must be an event id from the feed (digits), or 0 for everything kept',
  maxLength: 15,
  examples: ['1042'],
});

export const Actor = Type.Object({
  type: Type.Enum(['staff', 'system', 'guest', 'api_key']),
  id: Nullable(RefId(['stf', 'gst', 'key'], 'Staff, guest or API key id; null for the system')),
});
export type Actor = Static<typeof Actor>;

const Change = Type.Object({ from: Type.Unknown(), to: Type.Unknown() });
export type Changes = Record<string, { from: unknown; to: unknown }>;

export const Event = Type.Object(
  {
    id: Type.String({
      ...Cursor,
      description: 'Monotonic cursor (a decimal integer as a string); pass it back as `after` or Last-Event-ID',
    }),
    type: Type.Enum([...EVENT_TYPES]),
    occurredAt: Type.String({ format: 'date-time', maxLength: 30 }),
    actor: Actor,
    // The document says which record each type carries (EVENT_DATA, src/plugins/openapi.ts); the
    // serializer writes it as it is, where a union would validate each event against every shape.
    data: Type.Unknown({ description: 'The record after the change, in its API shape' }),
    changes: Type.Optional(
      Type.Record(Type.String({ maxLength: 64 }), Change, {
        description: 'For updates: each changed field as { from, to }; absent for creates',
      }),
    ),
  },
  {
    $id: 'Event',
    examples: [
      {
        id: '1042',
        type: 'knowledge.updated',
        occurredAt: EXAMPLE_TIME,
        actor: { type: 'staff', id: exampleId('stf') },
        data: {
          id: exampleId('kb'),
          title: 'Breakfast hours',
          content: 'Breakfast is served from 07:00 to 10:30 in the Atrium.',
          category: 'dining',
          createdAt: EXAMPLE_TIME,
          updatedAt: EXAMPLE_TIME,
        },
        changes: {
          content: {
            from: 'Breakfast is served from 07:00 to 10:00.',
            to: 'Breakfast is served from 07:00 to 10:30 in the Atrium.',
          },
        },
      },
    ],
  },
);
export type EventView = Static<typeof Event>;

const anyType = `(?:${EVENT_TYPES.map((t) => t.replace('.', '\\.')).join('|')})`;

export const TypesQuery = Type.String({
  maxLength: 2000,
  // What parseTypes (routes.ts) takes: known types separated by commas, blanks around each ignored.
  pattern: `^\\s*(?:${anyType}\\s*)?(?:,\\s*(?:${anyType}\\s*)?)*$`,
  'x-pattern-message': `must list event types, separated by commas: ${EVENT_TYPES.join(', ')}`,
  description: 'Comma-separated event types; only these are returned',
  examples: ['message.created,conversation.assigned'],
});

export const FeedQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        ...Cursor,
        description: 'Return events after this id (a previous nextCursor); default: the oldest kept',
      }),
    ),
    types: Type.Optional(TypesQuery),
    limit: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 100, default: 50 })),
  },
  { additionalProperties: false },
);

export const FeedResponse = Type.Object({
  success: Type.Literal(true),
  data: Type.Array(Event, { maxItems: 100 }),
  meta: Type.Object({
    nextCursor: Type.String({ ...Cursor, description: 'Pass as `after` to continue; unchanged when nothing is new' }),
    hasMore: Type.Boolean({ description: 'More events are already waiting after nextCursor' }),
    limit: Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
  }),
});
