// Owns the request and response schemas of conversations and their messages.
import { type Static, Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { documentedRule } from '../../lib/openapi-rules.js';
import { exampleId, Nullable, PageQuery, RecordId, RefId, RefIdInput } from '../../lib/schemas.js';
import { AttachmentIds, MessageAttachment } from '../attachments/schemas.js';
import { StaySummary } from '../stays/schemas.js';

// Enums rather than unions of literals: a bad value then reads "must be one of: …" once.
const CHANNELS = ['whatsapp', 'sms', 'email', 'web'] as const;
const STATUSES = ['open', 'closed', 'pending'] as const;
export const Channel = Type.Enum(CHANNELS);
export const ConversationStatus = Type.Enum(STATUSES);
export type ConversationStatus = Static<typeof ConversationStatus>;

export const MAX_LABELS = 20;
export const MAX_LABEL_LENGTH = 50;

/** Labels a PATCH or bulk item sets (src/modules/conversations/labels.ts normalises and checks them). */
const LabelsInput = Type.Array(
  Type.String({
    minLength: 1,
    maxLength: MAX_LABEL_LENGTH,
    pattern: '^[^,\\u0000]*[^,\\u0000\\s][^,\\u0000]*$',
    'x-pattern-message': 'must not be blank or contain a comma (the label filter separates labels with commas)',
  }),
  {
    maxItems: 100,
    description:
      `Replaces the conversation's labels: each 1–${MAX_LABEL_LENGTH} characters, stored trimmed and lower-case, ` +
      `each once (at most ${MAX_LABELS} after that); [] removes them all. When the \`labels\` setting lists labels, ` +
      'only those are allowed.',
    examples: [['vip', 'late-checkout']],
  },
);

const staffId = (description: string) => RefIdInput('stf', description);
const Timestamp = Type.String({ format: 'date-time', maxLength: 30 });

export const Conversation = Type.Object(
  {
    id: RecordId('cnv'),
    guestId: RefId('gst'),
    guest: Type.Object({ id: RefId('gst'), name: Type.String({ maxLength: 200 }) }),
    channel: Channel,
    status: ConversationStatus,
    assignee: Nullable(RefId('stf', 'Staff id of the assignee; null when unassigned')),
    subject: Nullable(Type.String({ maxLength: 200 })),
    lastMessageAt: Type.String({
      format: 'date-time',
      maxLength: 30,
      description: 'Time of the latest message; the creation time while there is none',
    }),
    messageCount: Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    labels: Type.Array(Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH }), {
      maxItems: MAX_LABELS,
      description: 'Lower-case labels, each once, in the order they were set',
      examples: [['vip', 'late-checkout']],
    }),
    stay: StaySummary,
    sla: Type.Union(
      [
        Type.Object(
          {
            firstResponseDueAt: Nullable({ ...Timestamp, description: 'While the first wait runs' }),
            nextResponseDueAt: Nullable({ ...Timestamp, description: 'While a later wait runs' }),
            resolutionDueAt: Nullable({ ...Timestamp, description: 'While not closed' }),
            status: Type.Enum(['ok', 'at_risk', 'breached'], {
              description:
                'at_risk once 80 % of a running target has passed; breached once a target was missed since the ' +
                'conversation was last opened',
            }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: "The `sla` setting's targets (docs/reports.md); null when no target applies" },
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    snoozedUntil: Nullable(
      Type.String({
        format: 'date-time',
        maxLength: 30,
        description:
          'While snoozed (status pending): when it opens again on its own; null otherwise. A guest message ' +
          'opens it at once; any status change clears it',
      }),
    ),
  },
  { $id: 'Conversation' },
);
export type ConversationView = Static<typeof Conversation>;

export const Message = Type.Object(
  {
    id: RecordId('msg'),
    conversationId: RefId('cnv'),
    direction: Type.Enum(['inbound', 'outbound']),
    type: Type.Enum(['text', 'note'], { description: 'text goes to the guest; note is internal and never sent' }),
    content: Type.String({ maxLength: 4096 }),
    sender: Type.Object({
      type: Type.Enum(['guest', 'staff', 'system', 'api_key']),
      id: Nullable(RefId(['gst', 'stf', 'key'], 'Guest, staff or API key id; null for the system (an auto reply)')),
    }),
    deliveryStatus: Type.Enum(['received', 'queued', 'sent', 'delivered', 'read', 'failed'], {
      description:
        'received: inbound from the guest; queued → sent → delivered → read (or failed): an outbound text on ' +
        'its way to the guest, only ever moving forward; a note is delivered at once because it stays inside the team',
    }),
    externalId: Nullable(
      Type.String({ maxLength: 500, description: "The provider's id (Twilio sid, WhatsApp id, e-mail Message-ID)" }),
    ),
    error: Nullable(
      Type.Object({
        code: Type.String({ maxLength: 100, examples: ['CHANNEL_NOT_CONFIGURED', 'PROVIDER_REJECTED'] }),
        message: Type.String({ maxLength: 2000, description: "The provider's reason, as it gave it" }),
      }),
    ),
    sentAt: Nullable(Timestamp),
    deliveredAt: Nullable(Timestamp),
    readAt: Nullable(Timestamp),
    attachments: Type.Array(MessageAttachment, {
      maxItems: 10,
      description: 'Files the message carries, in order (docs/attachments.md); empty for most',
    }),
    createdAt: Timestamp,
  },
  {
    $id: 'Message',
    ...documentedRule(
      'An inbound message is from the guest and `received`; an outbound one never is.',
      { properties: { direction: { const: 'inbound' } } },
      { properties: { deliveryStatus: { const: 'received' }, sender: { properties: { type: { const: 'guest' } } } } },
      {
        properties: {
          deliveryStatus: { not: { const: 'received' } },
          sender: { properties: { type: { not: { const: 'guest' } } } },
        },
      },
    ),
    // A reply a staff member just sent: queued for the channel, nothing heard back yet.
    examples: [
      {
        id: exampleId('msg'),
        conversationId: exampleId('cnv'),
        direction: 'outbound',
        type: 'text',
        content: 'Of course! Two towels are on their way to room 412.',
        sender: { type: 'staff', id: exampleId('stf') },
        deliveryStatus: 'queued',
        externalId: null,
        error: null,
        sentAt: null,
        deliveredAt: null,
        readAt: null,
        attachments: [],
        createdAt: EXAMPLE_TIME,
      },
    ],
  },
);
export type MessageView = Static<typeof Message>;

const content = (description: string) => Type.String({ minLength: 1, maxLength: 4096, description });
const Subject = Type.String({ minLength: 1, maxLength: 200 });

export const ListConversationsQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(ConversationStatus),
    channel: Type.Optional(Channel),
    assignee: Type.Optional(RefIdInput('stf', 'A staff id, or `unassigned` for those with none', 'unassigned')),
    label: Type.Optional(
      Type.String({
        maxLength: 1100,
        pattern: `^[^,\\u0000]*(,[^,\\u0000]*){0,${MAX_LABELS - 1}}$`,
        'x-pattern-message': `must be at most ${MAX_LABELS} labels separated by commas`,
        description:
          `Comma-separated labels (up to ${MAX_LABELS}): conversations carrying any of them, compared lower-cased. ` +
          'Empty: no filter.',
        examples: ['vip,late-checkout'],
      }),
    ),
    sla: Type.Optional(
      Type.Enum(['at_risk', 'breached'], {
        description: 'Only those whose `sla.status` is this now (docs/reports.md); not combined with `label`',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CreateConversationBody = Type.Object(
  {
    guestId: RefIdInput('gst', 'An existing guest id'),
    channel: Channel,
    subject: Type.Optional(Subject),
    assignee: Type.Optional(
      Nullable(
        staffId(
          'An active staff id. Defaults to the caller for a staff-role caller (who may only name themselves), ' +
            'otherwise to unassigned',
        ),
      ),
    ),
    content: Type.Optional(content('The first message, sent to the guest as an outbound text')),
  },
  {
    additionalProperties: false,
    examples: [
      {
        guestId: exampleId('gst'),
        channel: 'email',
        subject: 'Late check-out',
        assignee: exampleId('stf'),
        content: 'Hello Ana, we can offer you a late check-out at 14:00 on your last day.',
      },
    ],
  },
);
export type CreateConversationInput = Static<typeof CreateConversationBody>;

const changes = {
  status: Type.Optional(Type.Enum(STATUSES, { description: 'Any status may move to any other' })),
  assignee: Type.Optional(Nullable(staffId('An active staff id, or null to unassign (admin and manager only)'))),
  snoozedUntil: Type.Optional(
    Type.Union([Type.String({ format: 'date-time', maxLength: 30 }), Type.Null()], {
      description:
        'Snooze: with status pending, a moment in the future (at most 90 days ahead) when the conversation ' +
        'opens again on its own (within 5 s of it); a guest message opens it sooner. null un-snoozes it. ' +
        'A staff-role caller may snooze their own conversations',
      examples: [null],
    }),
  ),
  labels: Type.Optional(LabelsInput),
};

export const UpdateConversationBody = Type.Object(changes, { additionalProperties: false, minProperties: 1 });
export type ConversationChanges = Static<typeof UpdateConversationBody>;

export const BulkUpdateItem = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64, description: 'A conversation id', examples: [exampleId('cnv')] }),
    ...changes,
  },
  { additionalProperties: false, minProperties: 2, description: 'id and at least one of status, assignee, labels' },
);
export type BulkUpdateItem = Static<typeof BulkUpdateItem>;

export const MessagesQuery = Type.Object(PageQuery, { additionalProperties: false });

export const SendMessageBody = Type.Object(
  {
    content: Type.Optional(
      content(
        '1 to 4096 characters; required for text and note unless cannedResponseId or attachments are given, ' +
          'left out for template',
      ),
    ),
    cannedResponseId: Type.Optional(
      RefIdInput(
        'cr',
        'Instead of content (text or note): this canned response, its placeholders filled in for the conversation ' +
          '(guest, stay, hotel, the sender’s name); an id naming none is 400 VALIDATION_ERROR',
      ),
    ),
    attachments: Type.Optional(AttachmentIds),
    type: Type.Optional(
      Type.Enum(['text', 'note', 'template'], {
        default: 'text',
        description:
          'text (default) is queued for delivery to the guest over the conversation channel; ' +
          'note is an internal note for the team, never sent to the guest; template (WhatsApp only) sends an ' +
          'entry of the whatsapp_templates setting, allowed outside the 24-hour window, stored as a text',
      }),
    ),
    template: Type.Optional(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 512, examples: ['room_ready'] }),
          language: Type.String({ minLength: 2, maxLength: 6, examples: ['en_US'] }),
          parameters: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
              maxItems: 20,
              description: 'One value per placeholder of the body, {{1}} first',
            }),
          ),
        },
        { additionalProperties: false, description: 'With type template only' },
      ),
    ),
  },
  {
    additionalProperties: false,
    ...documentedRule(
      'A text or note has `content` or `cannedResponseId` (not both), or `attachments`, or files with either; ' +
        'no `template`. A template has `template` and none of the others.',
      { properties: { type: { const: 'template' } }, required: ['type'] },
      {
        required: ['template'],
        not: { anyOf: [{ required: ['content'] }, { required: ['cannedResponseId'] }, { required: ['attachments'] }] },
      },
      {
        anyOf: [{ required: ['content'] }, { required: ['cannedResponseId'] }, { required: ['attachments'] }],
        not: { anyOf: [{ required: ['template'] }, { required: ['content', 'cannedResponseId'] }] },
      },
    ),
    examples: [
      { content: 'Of course! Two towels are on their way to room 412.', type: 'text' },
      { cannedResponseId: exampleId('cr') },
    ],
  },
);
export type SendMessageInput = Static<typeof SendMessageBody>;
