// Owns /attachments: uploading a file (multipart, streamed, its type sniffed), reading its record,
// and serving its content through a signed link that needs no token.
import { rm } from 'node:fs/promises';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ANY_ROLE } from '../../lib/auth.js';
import { AppError, notFound } from '../../lib/errors.js';
import { errorResponse, IdParams, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { ACCEPTED_TYPES, inline } from './media.js';
import { findAttachment } from './repository.js';
import { Attachment, ContentQuery } from './schemas.js';
import { attachmentView, readableAttachment, readUpload, type StagedUpload, upload } from './service.js';

/** Content-Disposition with the cleaned name: ASCII for old clients, UTF-8 (RFC 8187) for the rest. */
function disposition(kind: 'inline' | 'attachment', filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

const UPLOAD_DESCRIPTION =
  'Send `multipart/form-data` with one part `file` (a file part; a plain field of up to 64 KiB is taken as ' +
  'text). The type is sniffed from the bytes, never taken from the client: images (jpeg, png, webp, gif, heic), ' +
  'pdf, audio (ogg/opus, mpeg, mp4/aac, amr), video (mp4, 3gpp) and UTF-8 plain text that is not markup. A ' +
  'declared part type the bytes contradict, or any other type, is 415; a file over `ATTACHMENT_MAX_BYTES` ' +
  '(default 16 MiB) is 413; more than one file is 400. Nothing is kept from a refused upload. Name the id in ' +
  '`attachments` of POST /conversations/{id}/messages (or of web inbound); an upload no message takes is ' +
  'removed after 24 hours.';

export const attachmentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const deps = () => app.attachments;
  const uploads = new WeakMap<FastifyRequest, StagedUpload>();
  // Registered here only: the upload route reads its parts itself, as they stream.
  await app.register(multipart);

  app.post(
    '/',
    {
      config: { access: ANY_ROLE, scope: ['conversations:write', 'channels:inbound'] },
      // The parts are read as they arrive (preHandler); the body schema documents them.
      attachValidation: true,
      preHandler: async (request) => {
        if (!request.isMultipart()) {
          throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as multipart/form-data with one `file` part');
        }
        const staged = await readUpload(deps(), request);
        uploads.set(request, staged);
        // What an Idempotency-Key's fingerprint covers: the same key with another file is 422.
        request.body = {
          file: { sha256: staged.received.sha256, filename: staged.filename, declared: staged.declared },
        };
      },
      // A staging file whatever became of the request (refused, replayed, failed): gone after it.
      onResponse: async (request) => {
        const staged = uploads.get(request);
        if (staged !== undefined) await rm(staged.received.path, { force: true });
      },
      bodyLimit: app.ctx.config.attachments.maxBytes + 64 * 1024,
      schema: {
        tags: ['attachments'],
        operationId: 'uploadAttachment',
        summary: 'Upload a file to send with a message',
        description: UPLOAD_DESCRIPTION,
        body: {
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: {
                  file: { type: 'string', format: 'binary', maxLength: 1024 * 1024 * 1024, description: 'The file' },
                },
                examples: [{ file: 'Room 412: the towels arrived, thank you.' }],
              },
            },
          },
        },
        response: {
          201: Ok(Attachment),
          ...STANDARD_ERRORS,
          413: errorResponse('PAYLOAD_TOO_LARGE: the file is over ATTACHMENT_MAX_BYTES', 413),
          415: errorResponse('UNSUPPORTED_MEDIA_TYPE: a type not accepted, or one the bytes contradict', 415),
        },
      },
    },
    async (request, reply) => {
      const record = await upload(app.ctx.store, deps(), request.user!, uploads.get(request)!);
      reply.code(201);
      return ok(record);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['attachments'],
        operationId: 'getAttachment',
        summary: 'Get an attachment record with a fresh signed link',
        description:
          'An upload no message took yet is readable by whoever uploaded it only: to anyone else, admins and ' +
          'API keys included, it is 404 as an unknown id. A file a message carries is readable by whoever may ' +
          'see its conversation (staff who may not: 403).',
        params: IdParams,
        response: { 200: Ok(Attachment), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const row = await readableAttachment(app.ctx.store, request.user!, request.params.id);
      return ok(attachmentView(row, deps().signer));
    },
  );

  // At most ATTACHMENT_MAX_BYTES's ceiling (src/config-attachments.ts).
  const binary = { type: 'string', format: 'binary', maxLength: 1024 * 1024 * 1024 } as const;
  app.get(
    '/:id/content',
    {
      config: { access: 'public' },
      schema: {
        tags: ['attachments'],
        operationId: 'getAttachmentContent',
        summary: "Download an attachment's content through its signed link",
        // The signed link is the permission: no token.
        security: [],
        description:
          'The `url` of an attachment: no token, the link itself is the permission (valid about an hour). ' +
          'Sent with `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`; images, pdf, audio ' +
          'and video inline, anything else as a download. A bad or expired signature is 403.',
        params: IdParams,
        querystring: ContentQuery,
        response: {
          200: {
            description: 'The content, in its sniffed type',
            content: Object.fromEntries(
              ACCEPTED_TYPES.map((t, i) => [t, { schema: i === 0 ? { ...binary, examples: ['…'] } : binary }]),
            ),
          },
          ...STANDARD_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { expires, signature } = request.query;
      const check =
        expires === undefined || signature === undefined ? 'bad' : deps().signer.verify(id, expires, signature);
      if (check === 'bad') throw new AppError('FORBIDDEN', 'The link is not valid: ask the API for a fresh one');
      if (check === 'expired') throw new AppError('FORBIDDEN', 'The link has expired: ask the API for a fresh one');
      const row = await findAttachment(app.ctx.store, id);
      if (row === undefined || row.status !== 'stored' || row.sha256 === null) throw notFound('Attachment', id);
      const blob = await deps().blobs.get(row.sha256);
      if (blob === null) throw notFound('Attachment content', id);
      const type = row.content_type ?? 'application/octet-stream';
      reply
        .header('content-type', type === 'text/plain' ? 'text/plain; charset=utf-8' : type)
        .header('content-length', String(blob.size))
        .header('content-disposition', disposition(inline(type) ? 'inline' : 'attachment', row.filename))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', 'sandbox')
        .header('cache-control', 'private, max-age=3600');
      return reply.send(blob.body);
    },
  );
};
