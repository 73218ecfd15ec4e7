// Owns the table types of the store, as Kysely sees them. Timestamps are ISO strings on SQLite and
// Date on PostgreSQL (see `toIso`), booleans 0/1 on SQLite, JSON is text on SQLite and jsonb on
// PostgreSQL. Types only and no imports of our own: the executor and the repositories build on it.
import type { ColumnType, Generated } from 'kysely';

export type Timestamp = string | Date;
export type Bool = number | boolean;
export type Json = unknown;

export interface StaffTable {
  id: string;
  name: string;
  email: string;
  email_lower: string;
  role: 'admin' | 'manager' | 'staff';
  department: string | null;
  active: Bool;
  password_hash: string;
  /** Tokens issued (iat, in seconds) before this are no longer valid: set by a password change. */
  tokens_valid_after: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface GuestTable {
  id: string;
  name: string;
  email: string | null;
  email_lower: string | null;
  phone: string | null;
  tags: Json;
  notes: string | null;
  /** Lower-cased "name email phone", searched by substring. */
  search_text: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The PMS's profile id (migration 026). */
  external_ref: ColumnType<string | null, string | null | undefined, string | null>;
  /** Typed key/value attributes as JSON (migration 026). */
  attributes: ColumnType<Json, Json | undefined, Json>;
}

export interface GuestTagTable {
  guest_id: string;
  tag: string;
  /** Its guest's created_at (migration 012): a tag's guests are an index range, newest first. */
  guest_created_at: Timestamp;
}

export interface ConversationTable {
  id: string;
  guest_id: string;
  channel: 'whatsapp' | 'sms' | 'email' | 'web';
  status: 'open' | 'closed' | 'pending';
  assignee: string | null;
  subject: string | null;
  last_message_at: Timestamp;
  message_count: number;
  /** JSON array of lower-case labels, in the order given (migration 028). */
  labels: Generated<string | string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** While snoozed (status pending): when a job wakes it (migration 024). */
  snoozed_until: Timestamp | null;
  /** SLA targets running (migration 025, written by src/modules/reports/recorder.ts). */
  sla_target?: 'first_response' | 'next_response' | null;
  sla_response_due?: Timestamp | null;
  sla_response_risk?: Timestamp | null;
  sla_resolution_due?: Timestamp | null;
  sla_resolution_risk?: Timestamp | null;
  sla_breached?: Bool;
}

export interface MessageTable {
  id: string;
  conversation_id: string;
  direction: 'inbound' | 'outbound';
  type: 'text' | 'note';
  content: string;
  sender_type: 'guest' | 'staff' | 'system' | 'api_key';
  sender_id: string | null;
  delivery_status: 'received' | 'queued' | 'sent' | 'delivered' | 'read' | 'failed';
  created_at: Timestamp;
  external_id: string | null;
  error_code: string | null;
  error_message: string | null;
  sent_at: Timestamp | null;
  delivered_at: Timestamp | null;
  read_at: Timestamp | null;
  provider_key: string | null;
  updated_at: Timestamp | null;
}

export interface ChannelSendTable {
  message_id: string;
  conversation_id: string;
  status: 'pending' | 'done';
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  locked_by: string | null;
  template: string | null;
  created_at: Timestamp;
  /** The conversation's channel (migration 020): claims are made per channel. */
  channel: string | null;
  /** When a `done` job finished: purged after the retention (src/modules/channels/statuses.ts). */
  finished_at: Timestamp | null;
}

/** A provider status for an id no text has yet: kept until a text is recorded sent with it. */
export interface ChannelStatusTable {
  id: Generated<number>;
  external_id: string;
  status: string;
  at: Timestamp | null;
  error_code: string | null;
  error_message: string | null;
  received_at: Timestamp;
}

export interface TaskTable {
  id: string;
  title: string;
  description: string | null;
  department: string;
  priority: 'low' | 'normal' | 'high' | 'urgent';
  status: 'open' | 'in_progress' | 'completed' | 'cancelled';
  guest_id: string | null;
  conversation_id: string | null;
  assignee: string | null;
  notes: string | null;
  due_at: Timestamp | null;
  completed_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The stay the task is about (migration 026). */
  stay_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** dueAt, or creation plus the sla setting's minutes (migration 025, src/modules/reports/recorder.ts). */
  deadline?: Timestamp | null;
}

/** A guest's stay (migration 026); dates are `YYYY-MM-DD` text on both stores. */
export interface StayTable {
  id: string;
  guest_id: string;
  room: string | null;
  check_in: string;
  check_out: string;
  status: 'booked' | 'in_house' | 'checked_out' | 'cancelled' | 'no_show';
  adults: number;
  children: number;
  notes: string | null;
  external_ref: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** When the status last became in_house / checked_out (check_in and check_out journey steps). */
  checked_in_at: Timestamp | null;
  checked_out_at: Timestamp | null;
}

/** A journey's step for one stay (src/modules/stays/journey-steps.ts). */
export interface JourneyStepTable {
  stay_id: string;
  journey: string;
  event: 'arrival' | 'departure' | 'check_in' | 'check_out';
  due_at: Timestamp;
  status: 'scheduled' | 'done' | 'skipped' | 'failed';
  message_id: string | null;
  task_id: string | null;
  reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface KnowledgeTable {
  id: string;
  title: string;
  content: string;
  category: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SettingTable {
  key: string;
  value: Json;
  updated_at: Timestamp;
  updated_by: string | null;
}

export interface RevokedTokenTable {
  jti: string;
  expires_at: number;
}

export interface EventTable {
  /** Auto-incremented, never reused: the feed cursor. */
  id: Generated<number>;
  type: string;
  occurred_at: Timestamp;
  actor_type: 'staff' | 'system' | 'guest' | 'api_key';
  actor_id: string | null;
  conversation_id: string | null;
  task_id: string | null;
  /** Assignee of the conversation or task after the change: what a staff-role reader may see. */
  assignee: string | null;
  /** JSON text (both stores). */
  data: string;
  changes: string | null;
}

export interface ApiKeyTable {
  id: string;
  name: string;
  /** JSON text: the key's scopes. */
  scopes: string;
  /** Keyed hash of the secret (src/modules/api-keys/secret.ts). */
  secret_hash: string;
  previous_hash: string | null;
  previous_expires_at: Timestamp | null;
  expires_at: Timestamp | null;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An event stream ticket not yet used (src/modules/events/tickets.ts). */
export interface StreamTicketTable {
  /** Hex SHA-256 of the ticket. */
  hash: string;
  caller_kind: 'staff' | 'api_key';
  caller_id: string;
  jti: string | null;
  issued_at: number | null;
  token_expires_at: number | null;
  secret_hash: string | null;
  expires_at: Timestamp;
}

export interface IdempotencyKeyTable {
  caller: string;
  route: string;
  key: string;
  fingerprint: string;
  status: number;
  body: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface AuditTable {
  id: string;
  action: string;
  actor_type: string | null;
  actor_id: string | null;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: Timestamp;
}

export interface WebhookTable {
  id: string;
  url: string;
  /** JSON text: an array of event types, or ["*"]. */
  events: string;
  description: string | null;
  active: Bool;
  secret: string;
  consecutive_failures: number;
  /** The API key that created or last changed it (it dies with the key); null: staff's. */
  api_key_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  event_id: number;
  event_type: string;
  /** The event as JSON text, sent byte for byte on every attempt. */
  payload: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  duration_ms: number | null;
  next_attempt_at: Timestamp | null;
  last_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  locked_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Rows per (status, channel, assignee) of conversations, kept by triggers (migration 002). */
export interface ConversationCountTable {
  status: string;
  channel: string;
  /** The assignee's staff id, or '' for none (a primary key column cannot be NULL portably). */
  assignee_key: string;
  n: number;
}

/** Rows per (status, priority, department, assignee) of tasks, kept by triggers (migration 002). */
export interface TaskCountTable {
  status: string;
  priority: string;
  department: string;
  /** The assignee's staff id, or '' for none. */
  assignee_key: string;
  n: number;
}

/** One row (id 1): the number of guests, kept by triggers (migration 002). */
export interface GuestCountTable {
  id: number;
  n: number;
}

/** A staff member's guests (migration 011): kept by triggers on conversations and tasks. */
export interface StaffGuestTable {
  staff_id: string;
  guest_id: string;
  guest_created_at: Timestamp;
  refs: number;
}

/** Per staff member and tag, how many of the member's guests hold it (migration 014). */
export interface StaffTagCountTable {
  staff_id: string;
  tag: string;
  slot: number;
  n: number;
}

/** An anonymous web visitor's guest, per caller, by the SHA-256 of its id (migration 023). */
export interface WebVisitorTable {
  caller_id: string;
  visitor_hash: string;
  guest_id: string;
  created_at: Timestamp;
}

/** A canned response (migration 028); its full-text index is the store's own (canned_fts or `search`). */
export interface CannedResponseTable {
  id: string;
  shortcode: string;
  title: string;
  content: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** One row per label of a conversation, with a copy of its list columns kept by a trigger (migration 028). */
export interface ConversationLabelTable {
  conversation_id: string;
  label: string;
  last_message_at: Timestamp;
  status: string;
  channel: string;
  assignee: string | null;
}

/** Per label and (status, channel, assignee), the conversations carrying it (migration 028). */
export interface ConversationLabelCountTable {
  label: string;
  status: string;
  channel: string;
  assignee_key: string;
  slot: number;
  n: number;
}

export interface StaffGuestCountTable {
  staff_id: string;
  n: number;
}

/** Work due at a time, claimed under a lease (src/modules/jobs/, migration 024). */
export interface JobTable {
  id: Generated<number>;
  kind: string;
  key: string | null;
  payload: string;
  status: 'pending' | 'done' | 'failed' | 'cancelled';
  run_at: Timestamp;
  attempts: Generated<number>;
  version: Generated<number>;
  locked_by: string | null;
  locked_until: Timestamp | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: Timestamp | null;
}

export interface Database {
  conversation_counts: ConversationCountTable;
  task_counts: TaskCountTable;
  guest_counts: GuestCountTable;
  staff_guests: StaffGuestTable;
  staff_guest_counts: StaffGuestCountTable;
  staff_tag_counts: StaffTagCountTable;
  events: EventTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  staff: StaffTable;
  guests: GuestTable;
  guest_tags: GuestTagTable;
  web_visitors: WebVisitorTable;
  conversations: ConversationTable;
  messages: MessageTable;
  channel_sends: ChannelSendTable;
  channel_statuses: ChannelStatusTable;
  tasks: TaskTable;
  stays: StayTable;
  journey_steps: JourneyStepTable;
  knowledge_entries: KnowledgeTable;
  settings: SettingTable;
  revoked_tokens: RevokedTokenTable;
  api_keys: ApiKeyTable;
  idempotency_keys: IdempotencyKeyTable;
  stream_tickets: StreamTicketTable;
  audit_log: AuditTable;
  jobs: JobTable;
  canned_responses: CannedResponseTable;
  conversation_labels: ConversationLabelTable;
  conversation_label_counts: ConversationLabelCountTable;
  attachments: AttachmentTable;
}

/** A file of a message, or an upload waiting for one (src/modules/attachments). */
export interface AttachmentTable {
  id: string;
  conversation_id: string | null;
  message_id: string | null;
  position: Generated<number>;
  source: 'upload' | 'inbound';
  status: 'pending' | 'stored' | 'failed';
  filename: string;
  content_type: string | null;
  size: number | null;
  sha256: string | null;
  error_code: string | null;
  error_message: string | null;
  origin: Json | null;
  attempts: Generated<number>;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}
