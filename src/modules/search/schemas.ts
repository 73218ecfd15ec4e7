// Owns the request and response schemas of message search.
import { Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { exampleId, ListMeta, NumberedPageQuery } from '../../lib/schemas.js';
import { Channel, Message } from '../conversations/schemas.js';
import { WINDOW } from './repository.js';

/** Longer searches add nothing a reader types and only cost the full-text engine work. */
export const MAX_QUERY_LENGTH = 200;

const Timestamp = (description: string) => Type.String({ format: 'date-time', maxLength: 30, description });

export const SearchMessagesQuery = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: MAX_QUERY_LENGTH,
      // Blank (spaces only): nothing to search for. The input plugin refuses U+0000 anyway.
      pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
      'x-pattern-message': 'must hold a word to search for, not only spaces',
      description:
        'The words to find. A message matches when it holds every word, the last one as a prefix (`late chec` ' +
        'finds "late checkout"), case- and accent-insensitively (`MULLER` finds "Müller"), never stemmed. ' +
        'Quotes, operators and punctuation separate words and mean nothing else; at most 16 words count. ' +
        'A blank text is a VALIDATION_ERROR; one without a letter or digit finds nothing.',
      examples: ['late check'],
    }),
    channel: Type.Optional(Channel),
    from: Type.Optional(Timestamp('Only messages created at or after this time')),
    to: Type.Optional(Timestamp('Only messages created before this time')),
    ...NumberedPageQuery,
  },
  { additionalProperties: false },
);

export const MessageSearchHit = Type.Object(
  {
    ...Message.properties,
    highlight: Type.String({
      maxLength: 8192,
      description:
        'Up to about 200 characters of the content around its first match, HTML-escaped (`&`, `<`, `>`, `"` and ' +
        "`'` as entities), each matching word wrapped in `<mark>…</mark>`, `…` where content was left out. " +
        'The only markup in it is `<mark>`: it may be rendered as HTML as it is.',
    }),
  },
  {
    $id: 'MessageSearchHit',
    description: 'A message with the snippet that shows why it matched.',
    examples: [
      {
        id: exampleId('msg'),
        conversationId: exampleId('cnv'),
        direction: 'inbound',
        type: 'text',
        content: 'Hi, could we have a late checkout tomorrow? Our flight is at 6 pm & we have a baby.',
        sender: { type: 'guest', id: exampleId('gst') },
        deliveryStatus: 'received',
        externalId: null,
        error: null,
        sentAt: null,
        deliveredAt: null,
        readAt: null,
        createdAt: EXAMPLE_TIME,
        attachments: [],
        highlight:
          'Hi, could we have a <mark>late</mark> <mark>checkout</mark> tomorrow? Our flight is at 6 pm &amp; we have a baby.',
      },
    ],
  },
);

const WINDOW_TEXT = WINDOW.toLocaleString('en-US');

export const SearchResponse = Type.Object({
  success: Type.Literal(true),
  data: Type.Array(MessageSearchHit, { maxItems: 100 }),
  meta: Type.Object(
    {
      ...ListMeta.properties,
      capped: Type.Boolean({
        description:
          `true when more than ${WINDOW_TEXT} messages match: only the newest ${WINDOW_TEXT} are ranked and counted ` +
          '(`total`), older ones are not found; add a word or a filter to narrow the search',
      }),
    },
    { description: `A numbered page; \`total\` counts the ranked matches, at most ${WINDOW_TEXT}.` },
  ),
});
