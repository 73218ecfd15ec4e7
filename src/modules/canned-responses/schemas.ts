// Owns the canned response resource's request and response schemas.
import { type Static, Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { exampleId, PageQuery, RecordId } from '../../lib/schemas.js';
import { MAX_SEARCH_LENGTH } from '../knowledge/schemas.js';
import { PLACEHOLDERS } from './placeholders.js';

export const MAX_CONTENT = 4096;

const placeholderList = PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ');

const Shortcode = Type.String({
  minLength: 1,
  maxLength: 50,
  pattern: '^[a-z0-9_-]{1,50}$',
  'x-pattern-message': 'must be 1 to 50 lowercase letters, digits, _ or -, like late_checkout',
  description: 'What staff type to pick it, unique',
  examples: ['late_checkout'],
});
const Title = Type.String({ minLength: 1, maxLength: 200, examples: ['Late check-out offer'] });
const Content = Type.String({
  minLength: 1,
  maxLength: MAX_CONTENT,
  description:
    `The text, with placeholders filled in when it is sent: ${placeholderList}. Any other {{…}} is 400 ` +
    'VALIDATION_ERROR; a stay placeholder with no stay, or a value not known, is sent empty.',
  examples: ['Hello {{guest.firstName}}, we can offer you a late check-out at 14:00. {{staff.name}}, {{hotel.name}}'],
});

export const CannedResponse = Type.Object(
  {
    id: RecordId('cr'),
    shortcode: Type.String({ maxLength: 50, examples: ['late_checkout'] }),
    title: Type.String({ maxLength: 200 }),
    content: Type.String({ maxLength: MAX_CONTENT }),
    createdAt: Type.String({ format: 'date-time', maxLength: 30 }),
    updatedAt: Type.String({ format: 'date-time', maxLength: 30 }),
  },
  {
    $id: 'CannedResponse',
    examples: [
      {
        id: exampleId('cr'),
        shortcode: 'late_checkout',
        title: 'Late check-out offer',
        content:
          'Hello {{guest.firstName}}, we can offer you a late check-out at 14:00. {{staff.name}}, {{hotel.name}}',
        createdAt: EXAMPLE_TIME,
        updatedAt: EXAMPLE_TIME,
      },
    ],
  },
);
export type CannedView = Static<typeof CannedResponse>;

export const CreateCannedBody = Type.Object(
  { shortcode: Shortcode, title: Title, content: Content },
  {
    additionalProperties: false,
    examples: [
      {
        shortcode: 'late_checkout',
        title: 'Late check-out offer',
        content:
          'Hello {{guest.firstName}}, we can offer you a late check-out at 14:00. {{staff.name}}, {{hotel.name}}',
      },
    ],
  },
);
export type CreateCannedInput = Static<typeof CreateCannedBody>;

export const UpdateCannedBody = Type.Object(
  { shortcode: Type.Optional(Shortcode), title: Type.Optional(Title), content: Type.Optional(Content) },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ title: 'Late check-out (14:00)' }],
  },
);
export type CannedChanges = Static<typeof UpdateCannedBody>;

export const ListCannedQuery = Type.Object(
  {
    ...PageQuery,
    search: Type.Optional(
      Type.String({
        maxLength: MAX_SEARCH_LENGTH,
        description:
          'Words in shortcode, title and content: every word must match (stemmed, case-insensitive); results ' +
          'are ranked, shortcode and title matches first. An empty one is no filter.',
        examples: ['checkout'],
      }),
    ),
  },
  { additionalProperties: false },
);

export const DeletedCanned = Type.Object({ id: Type.String({ maxLength: 64 }), deleted: Type.Literal(true) });
