// Sample files of each kind the attachment tests send, and a multipart upload through the API.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { call, type Res } from '../helpers.js';

/** A PNG: signature, header, a text chunk of `extra` random bytes (so contents differ), end. */
export function png(extra = 64): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(extra + 5);
  return Buffer.concat([
    Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex'),
    length,
    Buffer.from('tEXtc\u0000'),
    Buffer.from(randomBytes(extra).toString('hex').slice(0, extra)),
    Buffer.from('00000000', 'hex'),
    Buffer.from('0000000049454e44ae426082', 'hex'),
  ]);
}
export const pdf = () => Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n');
export const jpeg = () =>
  Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), randomBytes(64)]);
export const zip = () => Buffer.concat([Buffer.from('504b0304140000000800', 'hex'), randomBytes(64)]);

export interface Part {
  name?: string;
  filename?: string | null;
  contentType?: string | null;
  bytes: Buffer;
}

/** A multipart/form-data body of `parts` (a part without filename is a plain field). */
export function multipartBody(parts: Part[]): { body: Buffer; type: string } {
  const boundary = `----att${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const filename = p.filename === null ? '' : `; filename="${p.filename ?? 'file.bin'}"`;
    const type =
      p.contentType === null || p.filename === null
        ? ''
        : `\r\nContent-Type: ${p.contentType ?? 'application/octet-stream'}`;
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name ?? 'file'}"${filename}${type}\r\n\r\n`,
      ),
      p.bytes,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** POST /attachments with these parts as `token`. */
export function uploadParts(app: FastifyInstance, token: string, parts: Part[]): Promise<Res> {
  const m = multipartBody(parts);
  return call(app, 'POST', '/attachments', { token, body: m.body, headers: { 'content-type': m.type } });
}

/** POST /attachments of one file. */
export const upload = (
  app: FastifyInstance,
  token: string,
  bytes: Buffer,
  filename = 'photo.png',
  contentType?: string,
) => uploadParts(app, token, [{ bytes, filename, contentType: contentType ?? null }]);

/** A temporary folder for a file store, removed when the test ends. */
export function tempStore(t: TestContext): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'gma-att-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, env: { ATTACHMENTS_STORE: `file:${dir}` } };
}

/** GET of a signed link (a path under /api/v1, with its query), without a token. */
export async function fetchLink(app: FastifyInstance, url: string) {
  const u = new URL(url);
  return app.inject({ method: 'GET', url: `${u.pathname}${u.search}` });
}

/** Uploads a short plain-text file as `token`, asserting 201; returns its record. */
export async function uploadText(app: FastifyInstance, token: string, text: string) {
  const res = await uploadParts(app, token, [
    { bytes: Buffer.from(text), filename: 'note.txt', contentType: 'text/plain' },
  ]);
  if (res.status !== 201) throw new Error(`upload: ${res.status} ${res.raw.body}`);
  return res.data as { id: string; url: string };
}

/** The query values of a signed link, by name (for replaying the content route's example). */
export function linkSecrets(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url).searchParams);
}
