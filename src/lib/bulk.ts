// Owns bulk operations: a body of 1–100 items, each validated against the single
// item's schema and carried out on its own, atomically; the answer lists every item's outcome.
import type { FastifyBaseLogger } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { AppError, ERROR_STATUS, type ErrorCode, validation } from './errors.js';
import { documentedRule } from './openapi-rules.js';
import { errorDetails } from './schemas.js';
import { bodyChecker, inputProblem } from './validation.js';

export const MAX_BULK_ITEMS = 100;

/** Annotation (ignored by validation) naming a bulk body's item schema for the document. */
const BULK_ITEM = 'x-bulk-item';

/**
 * The request body of a bulk route whose items each take `item`. Only the envelope is validated
 * with the request: the items are checked one by one later (`runBulk`), so one bad item fails
 * only itself. The document shows the items as `item` (`documentedBulkBody`), and `examples` as
 * the example's items when given (else one item, the item's own example).
 */
export const BulkBody = (item: TSchema, examples?: unknown[]) =>
  Type.Object(
    {
      items: Type.Array(Type.Object({}, { additionalProperties: true }), {
        minItems: 1,
        maxItems: MAX_BULK_ITEMS,
        description: `1 to ${MAX_BULK_ITEMS} items, each validated and applied on its own: a bad item gets its own error in the answer`,
      }),
    },
    {
      additionalProperties: false,
      [BULK_ITEM]: item,
      ...(examples === undefined ? {} : { examples: [{ items: examples }] }),
    },
  );

/** A route body as the document shows it: a bulk body's items as their schema, else unchanged. */
export function documentedBulkBody(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || !(BULK_ITEM in body)) return body;
  const { [BULK_ITEM]: item, ...rest } = body as unknown as Record<string, unknown> & { properties: { items: object } };
  return { ...rest, properties: { ...rest.properties, items: { ...rest.properties.items, items: item } } };
}

const ItemError = Type.Object({
  code: Type.Enum(Object.keys(ERROR_STATUS) as ErrorCode[]),
  message: Type.String({ maxLength: 2000 }),
  details: Type.Optional(errorDetails(Object.values(ERROR_STATUS))!),
});

export const BulkResponse = <T extends TSchema>(data: T) =>
  Type.Object({
    success: Type.Literal(true),
    data: Type.Array(
      Type.Object(
        {
          index: Type.Integer({ format: 'int32', minimum: 0, maximum: MAX_BULK_ITEMS - 1 }),
          success: Type.Boolean(),
          data: Type.Optional(data),
          error: Type.Optional(ItemError),
        },
        documentedRule(
          'A success has `data` (the record), a failure `error` (as a request failing alone would).',
          { properties: { success: { const: true } } },
          { required: ['data'], not: { required: ['error'] } },
          { required: ['error'], not: { required: ['data'] } },
        ),
      ),
      { maxItems: MAX_BULK_ITEMS },
    ),
  });

export type BulkItemResult<O> =
  | { index: number; success: true; data: O }
  | { index: number; success: false; error: { code: string; message: string; details?: unknown } };

/**
 * Validates each item with `itemSchema` and runs `apply` on it in order. `apply` must be atomic
 * for its item (open its own transaction); a failure is reported for that item only.
 */
export async function runBulk<I, O>(
  items: unknown[],
  itemSchema: TSchema,
  apply: (item: I, index: number) => Promise<O>,
  log: FastifyBaseLogger,
): Promise<{ success: true; data: BulkItemResult<O>[] }> {
  const check = bodyChecker<I>(itemSchema, '');
  const data: BulkItemResult<O>[] = [];
  for (let index = 0; index < items.length; index++) {
    try {
      // What the request-wide input check leaves to each item: NUL characters and nesting depth.
      const problem = inputProblem(items[index], '');
      if (problem !== null) throw validation([problem], `${problem.field}: ${problem.message}`);
      data.push({ index, success: true, data: await apply(check(items[index]), index) });
    } catch (err) {
      if (err instanceof AppError) {
        const error: { code: string; message: string; details?: unknown } = { code: err.code, message: err.message };
        if (err.details !== undefined) error.details = err.details;
        data.push({ index, success: false, error });
      } else {
        log.error({ err, index }, 'bulk item failed');
        data.push({ index, success: false, error: { code: 'INTERNAL_ERROR', message: 'An internal error occurred' } });
      }
    }
  }
  return { success: true, data };
}
