// Owns the schema of a guest's export (GET /guests/:id/export, docs/data-rights.md): the guest and
// every record held about them, each in the shape its own route answers.
import { Type } from 'typebox';
import { Conversation, Message } from '../conversations/schemas.js';
import { Event } from '../events/schemas.js';
import { Stay } from '../stays/schemas.js';
import { Task } from '../tasks/schemas.js';
import { Guest } from './schemas.js';

/**
 * The export holds all there is, however much: no array has a limit of its own. The document
 * states the largest count a client must be ready for (a 32-bit count), as every array must.
 */
const ALL = { maxItems: 2_147_483_647 };

export const GuestExport = Type.Object(
  {
    guest: Guest,
    stays: Type.Array(Stay, ALL),
    conversations: Type.Array(
      Type.Object({
        ...Conversation.properties,
        messages: Type.Array(Message, { ...ALL, description: 'Oldest first, each with its files (attachments)' }),
      }),
      { ...ALL, description: 'Oldest first' },
    ),
    tasks: Type.Array(Task, { ...ALL, description: "Tasks about the guest or one of the guest's conversations" }),
    events: Type.Array(Event, {
      ...ALL,
      description:
        "Events kept (EVENT_RETENTION_DAYS) naming the guest or one of the guest's conversations, oldest first",
    }),
  },
  { description: 'Everything held about the guest (GDPR arts. 15 and 20)' },
);
