// Owns reading what a mail relay posts in place of a raw message, before it is validated: a form
// (SendGrid's raw mode: `email`; Mailgun's MIME form: `body-mime`), read part by part within the
// route's cap whatever the form announces, and telling which of the accepted forms a body is (a
// body in none is refused with 415 naming them).
import type { FastifyRequest } from 'fastify';
import { AppError, validation } from '../../lib/errors.js';
import { MAX_EMAIL_BYTES } from './email-schemas.js';

/** The form fields that carry the raw message: SendGrid's and Mailgun's. */
export const RAW_FIELDS = ['email', 'body-mime'] as const;
const RAW = new Set<string>(RAW_FIELDS);

/** What the route takes, for the 415 that names it. */
export const ACCEPTED =
  'Send the e-mail raw (Content-Type: message/rfc822), as a form with the raw message in `email` (SendGrid) ' +
  'or `body-mime` (Mailgun), or as Postmark’s JSON (with `RawEmail`, or its parsed fields with `From`)';

/** A request refused after its headers: the connection closes rather than take the rest. */
export const unread = (code: 'FORBIDDEN' | 'UNSUPPORTED_MEDIA_TYPE' | 'PAYLOAD_TOO_LARGE', message: string) =>
  new AppError(code, message, undefined, { connection: 'close' });

export const tooLarge = () => unread('PAYLOAD_TOO_LARGE', 'The e-mail is larger than 10 MiB');

/** The body types the route reads (a relay's parameters, such as a charset, aside). */
export const MEDIA_TYPES = [
  'message/rfc822',
  'multipart/form-data',
  'application/x-www-form-urlencoded',
  'application/json',
] as const;

/** The media type of a request, lower case, without parameters. */
export const mediaTypeOf = (request: FastifyRequest) =>
  (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * Busboy's bounds on a relay's form: the raw message within the route's cap as a file part (read
 * as bytes, never decoded: an 8-bit message keeps every byte), a relay's few other fields small
 * and few. The parts together are also held to the cap as they arrive (readForm).
 */
const FORM_LIMITS = {
  fieldNameSize: 200,
  fieldSize: 1024 * 1024,
  fields: 100,
  fileSize: MAX_EMAIL_BYTES,
  files: 20,
  parts: 120,
  headerPairs: 50,
};

/** Why a form could not be read, said for the relay's operator. */
function formError(err: unknown): Error {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return tooLarge();
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return unread('PAYLOAD_TOO_LARGE', 'The form has more parts than a mail relay sends');
  }
  if (code === 'FST_PROTO_VIOLATION') {
    return validation([{ field: 'body', message: 'must not name a form field __proto__' }]);
  }
  return validation(
    [{ field: 'body', message: 'is not valid multipart/form-data' }],
    'The body is not a valid multipart/form-data form',
  );
}

/**
 * The raw-message fields of a multipart form, each as latin1 text of its bytes (the first of each
 * name); every other part is read and dropped. Refused with 413 once the parts pass the cap.
 */
export async function readForm(request: FastifyRequest): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let total = 0;
  const count = (n: number) => {
    total += n;
    if (total > MAX_EMAIL_BYTES) throw tooLarge();
  };
  try {
    const parts = request.parts({
      limits: FORM_LIMITS,
      // The message is a file part whatever the relay calls it, so it is never decoded as text.
      isPartAFile: (name, _type, filename) => filename !== undefined || RAW.has(name ?? ''),
    });
    for await (const part of parts) {
      if (part.type === 'file') {
        const bytes = await part.toBuffer();
        count(bytes.length);
        if (RAW.has(part.fieldname) && out[part.fieldname] === undefined) {
          out[part.fieldname] = bytes.toString('latin1');
        }
      } else {
        count(String(part.value).length + part.fieldname.length);
      }
    }
  } catch (err) {
    throw formError(err);
  }
  return out;
}

/** Whether a form carries the raw message, in either relay's field. */
export const hasRawField = (form: unknown) =>
  typeof form === 'object' &&
  form !== null &&
  RAW_FIELDS.some((f) => typeof (form as Record<string, unknown>)[f] === 'string');

/** Whether a JSON body is Postmark's: its raw message, or a sender among its parsed fields. */
export const isPostmark = (body: unknown) =>
  typeof body === 'object' &&
  body !== null &&
  !Array.isArray(body) &&
  ['RawEmail', 'From', 'FromFull'].some((f) => f in body);
