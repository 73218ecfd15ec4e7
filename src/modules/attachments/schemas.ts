// Owns the schemas of attachments: the record an upload answers with, a file as a message lists
// it, and the signed link's query.
import { type Static, Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { exampleId, Nullable, RecordId, RefId, RefIdInput } from '../../lib/schemas.js';

const Timestamp = Type.String({ format: 'date-time', maxLength: 30 });
const Filename = Type.String({ maxLength: 200, description: 'Cleaned: no folders, no control characters' });
const ContentType = Type.String({
  maxLength: 100,
  description: 'Sniffed from the bytes (an alias the sender declared may name the same format)',
  examples: ['image/jpeg'],
});
const Size = Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Bytes' });
const Sha256 = Type.String({ minLength: 64, maxLength: 64, description: 'Hex SHA-256 of the content' });
const Status = Type.Enum(['pending', 'stored', 'failed'], {
  description:
    'pending: an inbound file not fetched yet; stored: its content is kept and `url` serves it; failed: it ' +
    'could not be fetched or was refused (`error` says why)',
});
const AttachmentError = Nullable(
  Type.Object({
    code: Type.String({ maxLength: 100, examples: ['ATTACHMENT_TOO_LARGE', 'ATTACHMENT_TYPE_REFUSED'] }),
    message: Type.String({ maxLength: 2000 }),
  }),
);
const Url = Nullable(
  Type.String({
    maxLength: 2000,
    format: 'uri',
    description: 'Signed link to the content under PUBLIC_URL, valid for about an hour, no token needed',
  }),
);

const exampleUrl = `https://api.hotel.example/api/v1/attachments/${exampleId('att')}/content?expires=1798765200&signature=q1Zq9bD2a0jvO0Q9pX8v5m2hYwq2S7oWc3nB4kT6u8E`;

/** A file as a message lists it. */
export const MessageAttachment = Type.Object(
  {
    id: RefId('att'),
    filename: Filename,
    contentType: Nullable(ContentType),
    size: Nullable(Size),
    status: Status,
    url: Url,
    error: AttachmentError,
  },
  { description: 'A file of a message' },
);
export type MessageAttachmentView = Static<typeof MessageAttachment>;

export const Attachment = Type.Object(
  {
    id: RecordId('att'),
    filename: Filename,
    contentType: Nullable(ContentType),
    size: Nullable(Size),
    sha256: Nullable(Sha256),
    status: Status,
    url: Url,
    error: AttachmentError,
    conversationId: Nullable(RefId('cnv', 'The conversation of the message that carries it; null while unused')),
    messageId: Nullable(RefId('msg', 'The message that carries it; null while unused')),
    createdAt: Timestamp,
  },
  {
    $id: 'Attachment',
    examples: [
      {
        id: exampleId('att'),
        filename: 'receipt.pdf',
        contentType: 'application/pdf',
        size: 48213,
        sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
        status: 'stored',
        url: exampleUrl,
        error: null,
        conversationId: null,
        messageId: null,
        createdAt: EXAMPLE_TIME,
      },
    ],
  },
);
export type AttachmentView = Static<typeof Attachment>;

/** The signed link's query; either missing is a link that is not valid (403), like a wrong one. */
export const ContentQuery = Type.Object(
  {
    expires: Type.Optional(Type.String({ minLength: 1, maxLength: 12, description: 'From the signed link' })),
    signature: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'From the signed link' })),
  },
  { additionalProperties: false },
);

/** `attachments` of a message body: ids of uploads (or of files of conversations the caller sees). */
export const AttachmentIds = Type.Array(RefIdInput('att', 'An attachment id from POST /attachments'), {
  minItems: 1,
  maxItems: 10,
  uniqueItems: true,
  description:
    '1 to 10 files uploaded with POST /attachments, sent in this order; an upload no message took yet is ' +
    'its uploader’s only (another caller’s reads as an unknown id)',
});
