// Owns the answer schema of a conversation's suggestions.
import { type Static, Type } from 'typebox';
import { exampleId, RecordId } from '../../lib/schemas.js';

export const MAX_SUGGESTIONS = 3;

const Score = Type.Number({
  exclusiveMinimum: 0,
  description: 'How well it matches the guest’s latest message: higher is better, comparable within its list',
});

export const Suggestions = Type.Object(
  {
    knowledge: Type.Array(
      Type.Object({
        id: RecordId('kb'),
        title: Type.String({ maxLength: 200 }),
        category: Type.String({ maxLength: 50 }),
        score: Score,
      }),
      { maxItems: MAX_SUGGESTIONS, description: 'Knowledge entries, best first' },
    ),
    cannedResponses: Type.Array(
      Type.Object({
        id: RecordId('cr'),
        shortcode: Type.String({ maxLength: 50 }),
        title: Type.String({ maxLength: 200 }),
        score: Score,
      }),
      { maxItems: MAX_SUGGESTIONS, description: 'Canned responses, best first' },
    ),
  },
  {
    $id: 'Suggestions',
    examples: [
      {
        knowledge: [{ id: exampleId('kb'), title: 'Check-out time', category: 'front-desk', score: 4.1732 }],
        cannedResponses: [
          { id: exampleId('cr'), shortcode: 'late_checkout', title: 'Late check-out offer', score: 6.0219 },
        ],
      },
    ],
  },
);
export type SuggestionsView = Static<typeof Suggestions>;
