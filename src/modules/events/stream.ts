// Owns one Server-Sent Events stream: catch up from the cursor out of the table, then relay what
// the hub sees, filtered for the caller; heartbeats keep proxies from closing an idle stream; it
// ends at its deadline (the token's expiry, a key's cap), when its caller loses access, when the
// client goes, when it falls too far behind, or on shutdown.
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Executor } from '../../db/types.js';
import type { EventHub, Subscriber } from './hub.js';
import { type EventListRow, listEvents, toEventJson } from './repository.js';

export interface StreamOptions {
  db: Executor;
  hub: EventHub;
  heartbeatMs: number;
  /** Events after this id. */
  after: number;
  types: readonly string[] | undefined;
  /** A staff-role caller's id: only events of conversations and tasks assigned to them. */
  assignee: string | undefined;
  /** When the stream ends at the latest, in ms since the epoch (see StreamAccess.endsAt). */
  endsAt: number;
  /**
   * Registers the stream with the access checks, which call `end` once its caller has lost access;
   * returns what unregisters it, called when the stream ends.
   */
  watch?: (end: () => void) => () => void;
  /** Called once when the stream ends, however it ends. */
  onEnd?: () => void;
}

const CATCH_UP_BATCH = 100;

/** An SSE frame as bytes, alone and inside an HTTP/1.1 chunk (`<size hex>\r\n…\r\n`). */
interface Frame {
  plain: Buffer;
  chunked: Buffer;
}

function framed(plain: Buffer): Frame {
  return { plain, chunked: Buffer.concat([Buffer.from(`${plain.length.toString(16)}\r\n`), plain, CRLF]) };
}

const CRLF = Buffer.from('\r\n');

/**
 * The SSE frame of each row, made once: the hub hands the same row object to every open stream, and
 * the event's JSON is the same for every caller who may see it (filters decide only whether it is
 * sent), so thousands of streams share one Buffer instead of each building its own. The chunked
 * form carries its own chunk header, so a stream writes it to its socket as it is (see `write`).
 * Keyed weakly: a frame goes when its row does.
 */
const frames = new WeakMap<EventListRow, Frame>();
function frameOf(row: EventListRow): Frame {
  let f = frames.get(row);
  if (f === undefined) {
    f = framed(Buffer.from(`id: ${row.id}\ndata: ${toEventJson(row)}\n\n`));
    frames.set(row, f);
  }
  return f;
}

/**
 * The frames of several rows as one write (one chunk). A stream that sees the hub's whole batch, as
 * most do, shares the batch's Buffer, made once for all of them.
 */
const batches = new WeakMap<readonly EventListRow[], Frame>();
function framesOf(rows: readonly EventListRow[], batch: readonly EventListRow[]): Frame {
  if (rows.length === 1) return frameOf(rows[0]!);
  const whole = rows.length === batch.length;
  let f = whole ? batches.get(batch) : undefined;
  if (f === undefined) {
    f = framed(Buffer.concat(rows.map((r) => frameOf(r).plain)));
    if (whole) batches.set(batch, f);
  }
  return f;
}

const RETRY = framed(Buffer.from('retry: 3000\n\n'));
const HEARTBEAT = framed(Buffer.from(': heartbeat\n\n'));
/** A client this far behind is cut off; it reconnects with Last-Event-ID and catches up from the table. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const MAX_TIMER_MS = 2_147_483_647;

export async function serveStream(request: FastifyRequest, reply: FastifyReply, o: StreamOptions): Promise<void> {
  const types = o.types === undefined || o.types.length === 0 ? undefined : new Set(o.types);
  const visible = (r: EventListRow) =>
    (o.assignee === undefined || r.assignee === o.assignee) && (types === undefined || types.has(r.type));

  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    // The gate's X-RateLimit-* and X-Request-Id, which a hijacked reply would otherwise drop.
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  // The head goes out now; the body is then written to the socket directly, each frame a Buffer
  // shared by every stream (already chunk-framed when the response is chunked, as it is for every
  // HTTP/1.1 client). Through `res.write` each delivery would also build its chunk header and
  // cork, uncork and write twice, per stream, which is most of a fan-out's cost and garbage.
  // `res.end()` still writes the closing chunk: the response has written no body of its own.
  // A pipelined request waiting behind another response on its connection has no socket yet: it
  // goes through `res.write`, which queues and frames for it.
  res.flushHeaders();
  const socket = res.socket;
  const chunked = res.chunkedEncoding;
  const write = (f: Frame) => (socket === null ? res.write(f.plain) : socket.write(chunked ? f.chunked : f.plain));
  const backlog = () => (socket === null ? res.writableLength : socket.writableLength);
  // Ask browsers' EventSource to reconnect after 3 s; it sends Last-Event-ID when it does.
  write(RETRY);

  let cursor = o.after;
  let live = false;
  let ended = false;
  const buffered: (readonly EventListRow[])[] = [];
  let unwatch: (() => void) | undefined;

  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    clearTimeout(expiry);
    unwatch?.();
    o.hub.remove(sub);
    o.onEnd?.();
    res.end();
  };
  /** Writes the rows of `batch` past the cursor that the caller may see, in one write. */
  const send = (batch: readonly EventListRow[]) => {
    if (ended) return;
    // Usually every row passes, and the batch itself (whose frames are shared) is written.
    let rows: readonly EventListRow[] = batch;
    for (let i = 0; i < batch.length; i++) {
      const row = batch[i]!;
      const id = Number(row.id);
      const pass = id > cursor && visible(row);
      if (id > cursor) cursor = id;
      if (!pass && rows === batch) rows = batch.slice(0, i);
      else if (pass && rows !== batch) (rows as EventListRow[]).push(row);
    }
    if (rows.length === 0) return;
    write(framesOf(rows, batch));
    if (backlog() > MAX_BUFFERED_BYTES) end();
  };
  const sub: Subscriber = {
    push: (rows) => (live ? send(rows) : buffered.push(rows)),
    close: end,
  };

  const heartbeat = setInterval(() => write(HEARTBEAT), o.heartbeatMs);
  const expiry = setTimeout(end, Math.max(0, Math.min(MAX_TIMER_MS, o.endsAt - Date.now())));
  unwatch = o.watch?.(end);
  // The response's close, not the request's: that one fires as soon as the (empty) body is read.
  res.on('close', end);
  res.on('error', end);
  // A client gone before the stream started fires no close on the response: end it now.
  if (request.raw.socket.destroyed) end();

  // Ended already (the client left): adding it would leave the hub polling for nobody.
  if (ended) return;
  try {
    await o.hub.add(sub);
    // Everything up to the hub's start is in the table; what the hub sees meanwhile waits in
    // `buffered` and is sent after, duplicates dropped by the cursor.
    for (;;) {
      const rows = await listEvents(o.db, {
        after: cursor,
        types: o.types,
        assignee: o.assignee,
        limit: CATCH_UP_BATCH,
      });
      send(rows);
      if (rows.length < CATCH_UP_BATCH || ended) break;
    }
    live = true;
    for (const rows of buffered.splice(0)) send(rows);
  } catch (err) {
    request.log.warn({ err }, 'event stream failed while catching up');
    end();
  }
}
