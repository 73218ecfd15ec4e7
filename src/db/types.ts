// Owns the names repositories import the store's types by: the tables (src/db/tables.ts), the
// executor and transaction they run on (src/db/executor.ts), and the row shapes read from them.
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type {
  ApiKeyTable,
  AuditTable,
  ConversationTable,
  Database,
  EventTable,
  GuestTable,
  KnowledgeTable,
  MessageTable,
  SettingTable,
  StaffTable,
  TaskTable,
  WebhookDeliveryTable,
  WebhookTable,
} from './tables.js';

export type { CommitTotal, Executor, Tx } from './executor.js';
export type * from './tables.js';

export type Db = Kysely<Database>;

export type StaffRow = Selectable<StaffTable>;
export type NewStaff = Insertable<StaffTable>;
export type StaffUpdate = Updateable<StaffTable>;
export type GuestRow = Selectable<GuestTable>;
export type ConversationRow = Selectable<ConversationTable>;
export type MessageRow = Selectable<MessageTable>;
export type TaskRow = Selectable<TaskTable>;
export type KnowledgeRow = Selectable<KnowledgeTable>;
export type SettingRow = Selectable<SettingTable>;
export type EventRow = Selectable<EventTable>;
export type WebhookRow = Selectable<WebhookTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type AuditRow = Selectable<AuditTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
