// Owns one delivery attempt on the wire: the signed JSON POST, its 5 s limit, no redirects, the
// address check at connect time, and how the outcome is classified (success, retry, give up).
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { guardedLookup, isPublicAddress, literalHost } from './url-guard.js';

export const USER_AGENT = 'GuestMessagingAPI-Webhooks/1';
export const ATTEMPT_TIMEOUT_MS = 5000;

/** `v1=` + hex HMAC-SHA256 of "<timestamp>.<body>" keyed with the secret (its UTF-8 bytes). */
export const sign = (secret: string, timestamp: number, body: string): string =>
  `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;

/** The request body: the delivery id and the event, spliced so the event is sent as stored. */
export const deliveryBody = (deliveryId: string, eventJson: string): string =>
  `{"id":${JSON.stringify(deliveryId)},"event":${eventJson}}`;

export interface AttemptResult {
  ok: boolean;
  /** Worth another attempt later: network errors, timeouts, 429 and 5xx. */
  retryable: boolean;
  responseCode: number | null;
  error: string | null;
  durationMs: number;
  /** Cut short by shutdown: not an attempt at all, the lock is released and it runs again later. */
  interrupted: boolean;
}

const MAX_ERROR = 500;
const clip = (s: string) => (s.length > MAX_ERROR ? `${s.slice(0, MAX_ERROR - 1)}…` : s);

export function classify(status: number): { ok: boolean; retryable: boolean } {
  if (status >= 200 && status < 300) return { ok: true, retryable: false };
  // Other 4xx (and redirects, which are not followed) say the request itself is unwelcome: a
  // retry would get the same answer.
  return { ok: false, retryable: status === 429 || status >= 500 };
}

export function attempt(
  target: { url: string; secret: string },
  deliveryId: string,
  eventJson: string,
  opts: { allowPrivate: boolean; shutdown: AbortSignal },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const fail = (error: string, retryable: boolean, interrupted = false): AttemptResult => ({
    ok: false,
    retryable,
    responseCode: null,
    error: clip(error),
    durationMs: elapsed(),
    interrupted,
  });

  const url = new URL(target.url);
  const literal = literalHost(url);
  // A literal IP skips `lookup`, so it is checked here (the URL may predate a policy change).
  if (!opts.allowPrivate && literal !== null && !isPublicAddress(literal)) {
    return Promise.resolve(fail(`${literal} is not a public address`, false));
  }
  const body = deliveryBody(deliveryId, eventJson);
  const timestamp = Math.floor(Date.now() / 1000);
  // One controller, held by the timer and the shutdown listener until the attempt settles. Not
  // AbortSignal.any([AbortSignal.timeout(…), shutdown]): on Node 20 that combined signal is only
  // weakly held, so a garbage collection during the request could drop it and a receiver that
  // never answers would hold the delivery for good.
  const attempt = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    attempt.abort();
  }, ATTEMPT_TIMEOUT_MS);
  const onShutdown = () => attempt.abort();
  if (opts.shutdown.aborted) onShutdown();
  else opts.shutdown.addEventListener('abort', onShutdown, { once: true });
  const signal = attempt.signal;

  return new Promise((resolve) => {
    let settled = false;
    const settle = (r: AttemptResult) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        opts.shutdown.removeEventListener('abort', onShutdown);
        resolve(r);
      }
    };
    const req = (url.protocol === 'https:' ? https : http).request(
      url,
      {
        method: 'POST',
        signal,
        agent: false,
        ...(opts.allowPrivate ? {} : { lookup: guardedLookup }),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': USER_AGENT,
          'webhook-id': deliveryId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': sign(target.secret, timestamp, body),
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const { ok, retryable } = classify(status);
        // The body is not kept; reading it to the end lets the receiver finish cleanly.
        res.resume();
        const done = () =>
          settle({
            ok,
            retryable,
            responseCode: status,
            error: ok ? null : `HTTP ${status}`,
            durationMs: elapsed(),
            interrupted: false,
          });
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (opts.shutdown.aborted) return settle(fail('interrupted by shutdown', true, true));
      if (timedOut) return settle(fail(`no response within ${ATTEMPT_TIMEOUT_MS} ms`, true));
      if (err.code === 'EADDRBLOCKED') return settle(fail(err.message, false));
      settle(fail(err.code ? `${err.code}: ${err.message}` : err.message, true));
    });
    req.end(body);
  });
}
