// Owns the knowledge resource's request and response schemas.
import { Type } from 'typebox';
import { PageQuery, RecordId } from '../../lib/schemas.js';

export const DEFAULT_CATEGORY = 'general';
/** Longer searches add nothing a reader types and only cost the full-text engine work. */
export const MAX_SEARCH_LENGTH = 200;

export const KnowledgeEntry = Type.Object(
  {
    id: RecordId('kb'),
    title: Type.String({ maxLength: 200 }),
    content: Type.String({ maxLength: 50_000 }),
    category: Type.String({ maxLength: 50 }),
    createdAt: Type.String({ format: 'date-time', maxLength: 30 }),
    updatedAt: Type.String({ format: 'date-time', maxLength: 30 }),
  },
  { $id: 'KnowledgeEntry' },
);

const Title = Type.String({ minLength: 1, maxLength: 200 });
const Content = Type.String({ minLength: 1, maxLength: 50_000 });
const CATEGORY = { minLength: 1, maxLength: 50 };
const Category = Type.String(CATEGORY);

export const CreateEntryBody = Type.Object(
  {
    title: Title,
    content: Content,
    category: Type.Optional(Type.String({ ...CATEGORY, default: DEFAULT_CATEGORY })),
  },
  { additionalProperties: false },
);

export const UpdateEntryBody = Type.Object(
  {
    title: Title,
    content: Content,
    category: Type.Optional(Type.String({ ...CATEGORY, description: 'Unchanged when omitted' })),
  },
  { additionalProperties: false },
);

export const ListEntriesQuery = Type.Object(
  {
    ...PageQuery,
    category: Type.Optional(Category),
    search: Type.Optional(
      Type.String({
        maxLength: MAX_SEARCH_LENGTH,
        description:
          'Full-text search over title and content: every word must match (stemmed, case-insensitive); ' +
          'results are ranked, title matches first. Operators and punctuation are ignored; a search with no ' +
          'words returns nothing, an empty one is no filter.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DeletedEntry = Type.Object({ id: Type.String({ maxLength: 64 }), deleted: Type.Literal(true) });
