// Owns the schemas of what a mail relay posts to the inbound e-mail route: the raw message, the
// forms of SendGrid (raw mode) and Mailgun (MIME), and Postmark's JSON, each with an example the
// route stores.
import { type Static, Type } from 'typebox';

const Text = (maxLength: number, description?: string) =>
  Type.String({ maxLength, ...(description ? { description } : {}) });

/** An inbound e-mail's size at most, however it is posted: a guest's text with a few photos. */
export const MAX_EMAIL_BYTES = 10 * 1024 * 1024;

const RawMail = (description: string) => Type.String({ minLength: 1, maxLength: MAX_EMAIL_BYTES, description });

/** A guest's e-mail as its mail program wrote it (the examples of every form). */
export const rawExample = (id: string) =>
  [
    'From: Ana Lopes <ana.lopes@example.com>',
    'To: Front Desk <desk@example-hotel.com>',
    'Subject: Late check-out',
    `Message-ID: <${id}@mail.example.com>`,
    'Date: Wed, 25 Nov 2026 09:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello! Could we check out at 14:00 on Sunday?',
    '',
  ].join('\r\n');

/** The raw message posted as the body (`message/rfc822`). */
export const RawEmailBody = Type.String({
  ...RawMail('The message as received (RFC 822), byte for byte'),
  examples: [rawExample('CAJd8x3k5q7w')],
});

/** A guest's e-mail as a relay's form carries it: SendGrid's (multipart) and Mailgun's (either). */
const relayForm = (example: Record<string, string>) =>
  Type.Object(
    {
      email: Type.Optional(RawMail('SendGrid Inbound Parse, "POST the raw, full MIME message": the message')),
      'body-mime': Type.Optional(RawMail("Mailgun's forward() to a URL ending in mime: the message")),
    },
    {
      additionalProperties: true,
      description: 'The raw message in `email` or `body-mime` (a field or a file part); other fields are ignored',
      examples: [example],
    },
  );

/** A relay's form: the raw message; its other fields are ignored. */
export const MultipartRelayForm = relayForm({ email: rawExample('CAJd8x3k5q7x'), to: 'desk@parse.example-hotel.com' });
export const EncodedRelayForm = relayForm({
  'body-mime': rawExample('CAJd8x3k5q7y'),
  recipient: 'desk@mg.example-hotel.com',
});

const PostmarkAddress = Type.Object(
  { Email: Type.Optional(Text(320)), Name: Type.Optional(Text(1000)) },
  { additionalProperties: true },
);

/** Postmark's inbound webhook JSON: the fields read, when it carries no RawEmail; the rest is ignored. */
export const PostmarkInbound = Type.Object(
  {
    RawEmail: Type.Optional(RawMail('The raw message ("Include raw email content in JSON payload"): read first')),
    From: Type.Optional(Text(1000, 'The sender, `Name <address>` or an address')),
    FromName: Type.Optional(Text(1000)),
    FromFull: Type.Optional(PostmarkAddress),
    To: Type.Optional(Text(100_000)),
    Cc: Type.Optional(Text(100_000)),
    Subject: Type.Optional(Text(100_000)),
    Date: Type.Optional(Text(200)),
    MessageID: Type.Optional(Text(200, "Postmark's id of the mail: keeps its retries to one message")),
    TextBody: Type.Optional(Text(MAX_EMAIL_BYTES)),
    HtmlBody: Type.Optional(Text(MAX_EMAIL_BYTES)),
    Headers: Type.Optional(
      Type.Array(Type.Object({ Name: Text(1000), Value: Text(100_000) }, { additionalProperties: true }), {
        maxItems: 10_000,
        description: 'The headers Postmark passes: Message-ID, In-Reply-To, References, Auto-Submitted, …',
      }),
    ),
    Attachments: Type.Optional(
      Type.Array(Type.Object({ Name: Type.Optional(Text(1000)) }, { additionalProperties: true }), {
        maxItems: 10_000,
        description: 'Counted, never kept',
      }),
    ),
  },
  {
    additionalProperties: true,
    anyOf: [{ required: ['RawEmail'] }, { required: ['From'] }, { required: ['FromFull'] }],
    description: "Postmark's inbound webhook: its RawEmail when present, else its parsed fields",
    examples: [
      {
        From: 'ana.lopes@example.com',
        FromName: 'Ana Lopes',
        FromFull: { Email: 'ana.lopes@example.com', Name: 'Ana Lopes' },
        To: 'desk@inbound.example-hotel.com',
        Subject: 'Late check-out',
        MessageID: '73e6d360-66eb-11e1-8e72-a8904824019b',
        Date: 'Wed, 25 Nov 2026 09:00:00 +0000',
        TextBody: 'Hello! Could we check out at 14:00 on Sunday?',
        HtmlBody: '',
        Headers: [{ Name: 'Message-ID', Value: '<CAJd8x3k5q7z@mail.example.com>' }],
        Attachments: [],
      },
    ],
  },
);
export type PostmarkInbound = Static<typeof PostmarkInbound>;
