// Sends every operation of a served OpenAPI document to an app, in document order, built only from
// what the document says: the path, its parameters' examples, each request body example of each
// media type, and the credentials its security names (a bearer token, Twilio's or Meta's signature,
// the e-mail relay's Basic auth, computed here with the test's secrets). The examples' placeholder
// ids (src/lib/schemas.ts exampleId) become real records' ids: a DELETE (or an erase) takes the record an
// earlier example created of that type (so the fixture stays for the operations after it),
// anything else the fixture of that type.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { exampleId } from '../src/lib/schemas.js';
import { EMAIL_SECRET, metaSign, PUBLIC_URL, twilioSign } from './channels/signing.js';
import { type Doc, METHODS } from './document-examples.js';

type Schema = Record<string, unknown>;

const PLACEHOLDER = new RegExp(`\\b([a-z]+)_${exampleId('x').slice(2)}\\b`, 'g');

export interface Replayed {
  /** "POST /api/v1/guests (application/json)". */
  name: string;
  operationId: string;
  method: string;
  url: string;
  status: number;
  contentType: string;
  // biome-ignore lint/suspicious/noExplicitAny: the answer's JSON, asserted on by the caller.
  body: any;
  /** How the answer breaks what the document says of it (its status, media type or schema). */
  problems: string[];
}

export interface ReplayOptions {
  /** A record id of each type the examples name (`gst` → a guest's id …). */
  fixtures: Record<string, string>;
  /** The bearer token to send now (the caller's session may change as operations run). */
  token(): string;
  /** Values for parameters the document cannot know (a verify token): by parameter name. */
  secrets: Record<string, string>;
  /** Operations opened and closed at once rather than read to the end (a never-ending stream). */
  streams: Set<string>;
  /** Checks a value against the document's schema at a pointer: the errors, none when valid. */
  check(schema: string[], value: unknown): string[];
  /** Called with each answer as it arrives, before the next operation is sent. */
  onAnswer(r: Replayed): void;
}

/** The examples of a media object: its `example` and its named `examples`. */
function mediaExamples(media: Schema): unknown[] {
  const named = Object.values((media.examples ?? {}) as Record<string, { value: unknown }>).map((e) => e.value);
  return 'example' in media ? [media.example, ...named] : named;
}

function multipart(fields: Record<string, unknown>): { body: Buffer; type: string } {
  const boundary = `----replay${randomBytes(8).toString('hex')}`;
  const parts = Object.entries(fields).map(
    ([name, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${typeof value === 'string' ? value : JSON.stringify(value)}\r\n`,
  );
  return {
    body: Buffer.from(`${parts.join('')}--${boundary}--\r\n`),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

/** The payload of `value` sent as `type`, and the Content-Type to send it with. */
function encode(type: string, value: unknown): { payload: string | Buffer; type: string } {
  if (type === 'application/json' || type.endsWith('+json')) return { payload: JSON.stringify(value), type };
  if (type === 'application/x-www-form-urlencoded') {
    return { payload: new URLSearchParams(value as Record<string, string>).toString(), type };
  }
  if (type === 'multipart/form-data') {
    const m = multipart(value as Record<string, unknown>);
    return { payload: m.body, type: m.type };
  }
  return { payload: typeof value === 'string' ? value : JSON.stringify(value), type };
}

export async function replayDocument(app: FastifyInstance, doc: Doc, o: ReplayOptions): Promise<void> {
  const created: Record<string, string> = {};
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      const operationId = String(op.operationId);
      // An erase (POST …/erase) ends its record's data as a DELETE ends the record.
      const ends = method === 'delete' || path.endsWith('/erase');
      const ids = (prefix: string) =>
        (ends ? (created[prefix] ?? o.fixtures[prefix]) : o.fixtures[prefix]) ??
        assertNever(`${operationId}: no record of type ${prefix} to stand for ${exampleId(prefix)}`);
      const subst = <T>(value: T): T =>
        JSON.parse(JSON.stringify(value).replace(PLACEHOLDER, (_m, prefix: string) => ids(prefix)));
      const params = (op.parameters ?? []) as Schema[];
      const exampleOf = (p: Schema): unknown => {
        const own = p.example ?? ((p.schema as Schema | undefined)?.examples as unknown[] | undefined)?.[0];
        return o.secrets[String(p.name)] ?? (own === undefined ? undefined : subst(own));
      };
      let url = path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
        const p = params.find((x) => x.in === 'path' && x.name === name);
        const value = p && exampleOf(p);
        if (value === undefined) assertNever(`${operationId}: path parameter ${name} has no example`);
        return encodeURIComponent(String(value));
      });
      const query = new URLSearchParams();
      const headers: Record<string, string> = {};
      for (const p of params) {
        const value = exampleOf(p);
        if (value === undefined) {
          if (p.required === true) assertNever(`${operationId}: required ${p.in} parameter ${p.name} has no example`);
          continue;
        }
        if (p.in === 'query') query.append(String(p.name), String(value));
        if (p.in === 'header') headers[String(p.name).toLowerCase()] = String(value);
      }
      if (query.size > 0) url += `?${query}`;
      const content = ((op.requestBody as Schema | undefined)?.content ?? {}) as Record<string, Schema>;
      const bodies = Object.entries(content).flatMap(([type, media]) => mediaExamples(media).map((v) => ({ type, v })));
      const sends = bodies.length > 0 ? bodies : [null];
      for (const body of sends) {
        const h = { ...headers };
        const encoded = body === null ? null : encode(body.type, subst(body.v));
        if (encoded !== null) h['content-type'] = encoded.type;
        const scheme = Object.keys(((op.security ?? [{}]) as Schema[])[0] ?? {})[0];
        if (scheme === 'bearerAuth') h.authorization = `Bearer ${o.token()}`;
        if (scheme === 'emailInboundBasic') {
          h.authorization = `Basic ${Buffer.from(`relay:${EMAIL_SECRET}`).toString('base64')}`;
        }
        if (scheme === 'whatsappSignature') h['x-hub-signature-256'] = metaSign(String(encoded?.payload ?? ''));
        if (scheme === 'twilioSignature') {
          const form = Object.fromEntries(new URLSearchParams(String(encoded?.payload ?? '')));
          h['x-twilio-signature'] = twilioSign(PUBLIC_URL + url, form);
        }
        const name = `${method.toUpperCase()} ${path}${body === null ? '' : ` (${body.type})`}`;
        const answer = await send(app, method, url, h, encoded?.payload, o.streams.has(operationId));
        const r: Replayed = { name, operationId, method, url, ...answer, problems: [] };
        const documented = ((op.responses ?? {}) as Record<string, Schema>)[String(r.status)];
        const type = r.contentType.split(';')[0]!.trim();
        const media = (documented?.content as Record<string, Schema> | undefined)?.[type];
        if (documented === undefined) r.problems.push(`status ${r.status} is not documented`);
        else if (r.body !== undefined && r.body !== '' && media === undefined)
          r.problems.push(`${type} is not documented`);
        else if (type === 'application/json' && r.body !== undefined) {
          r.problems.push(
            ...o.check(['paths', path, method, 'responses', String(r.status), 'content', type, 'schema'], r.body),
          );
        }
        const data = r.body?.data;
        if (r.status === 201 && typeof data?.id === 'string') created[data.id.split('_')[0]] = data.id;
        o.onAnswer(r);
      }
    }
  }
}

function assertNever(message: string): never {
  throw new Error(message);
}

async function send(
  app: FastifyInstance,
  method: string,
  url: string,
  headers: Record<string, string>,
  payload: string | Buffer | undefined,
  stream: boolean,
): Promise<{ status: number; contentType: string; body: unknown }> {
  const m = method.toUpperCase() as 'GET';
  if (stream) {
    // Its head is the answer; then the client goes away, as a browser tab closes.
    const abort = new AbortController();
    const res = await app.inject({ method: m, url, headers, payloadAsStream: true, signal: abort.signal });
    abort.abort();
    res.stream().on('error', () => {});
    return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: undefined };
  }
  const res = await app.inject({ method: m, url, headers, ...(payload === undefined ? {} : { payload }) });
  const contentType = String(res.headers['content-type'] ?? '');
  let body: unknown = res.body;
  if (contentType.startsWith('application/json') && res.body !== '') body = JSON.parse(res.body);
  return { status: res.statusCode, contentType, body };
}
