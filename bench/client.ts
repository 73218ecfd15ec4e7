// Owns talking to the API outside the load: logging in as the seeded admin, finding the ids and
// search term the scenarios use through the API itself, and checking each scenario's answer once.
import { HOT_SUBJECT } from './hot.js';

const API = '/api/v1';
/** Conversations the message POSTs are spread over (as many as the store has open, up to this). */
const POST_TARGETS = 1000;

interface Envelope {
  success?: boolean;
  data?: unknown;
  meta?: { total?: unknown; nextCursor?: unknown };
  error?: { code?: string; message?: string };
}

async function call(
  baseUrl: string,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Envelope }> {
  const res = await fetch(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let body: Envelope;
  try {
    body = JSON.parse(text) as Envelope;
  } catch {
    throw new Error(`${init.method ?? 'GET'} ${path}: answered ${res.status} with non-JSON: ${text.slice(0, 200)}`);
  }
  return { status: res.status, body };
}

function expectOk(what: string, r: { status: number; body: Envelope }): Envelope {
  if (r.status < 200 || r.status > 299 || r.body.success !== true) {
    throw new Error(`${what}: ${r.status} ${r.body.error?.code ?? ''} ${r.body.error?.message ?? ''}`.trim());
  }
  return r.body;
}

export async function login(baseUrl: string, email: string, password: string): Promise<string> {
  const body = expectOk(
    'log in as the seeded admin',
    await call(baseUrl, `${API}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    }),
  );
  const token = (body.data as { token?: unknown } | undefined)?.token;
  if (typeof token !== 'string') throw new Error('log in: the answer has no data.token');
  return token;
}

export interface Targets {
  /** Open conversations that have messages: read round-robin. */
  conversationIds: string[];
  /**
   * Open conversations free text may be sent to at any time (not WhatsApp, whose 24-hour window
   * refuses a text to a guest who has not written lately: a 409 by design), up to 1,000: written
   * round-robin.
   */
  postIds: string[];
  /** A guest's last name, lower-cased: a realistic search that matches several guests. */
  guestSearch: string;
  /** Guests of the first page: PATCHed round-robin by the guest-update scenario. */
  guestIds: string[];
}

export async function discover(baseUrl: string, token: string): Promise<Targets> {
  const auth = { authorization: `Bearer ${token}` };
  const list = expectOk(
    'list conversations',
    await call(baseUrl, `${API}/conversations?status=open&limit=100`, { headers: auth }),
  );
  const items = (list.data ?? []) as { id: string; messageCount: number; subject: string | null; channel: string }[];
  // The depth figures' long conversation (bench/hot.ts) is left out: the scenarios measure typical ones.
  const typical = items.filter((c) => c.messageCount > 0 && c.subject !== HOT_SUBJECT);
  const conversationIds = typical.map((c) => c.id);
  const postIds = typical.filter((c) => c.channel !== 'whatsapp').map((c) => c.id);
  // Texts are written over up to POST_TARGETS conversations, walked on by cursor: a conversation's
  // texts are sent one after another, so thousands of texts a second into a few dozen conversations
  // would measure how fast one conversation's queue turns over, not the server.
  let cursor = list.meta?.nextCursor;
  while (typeof cursor === 'string' && postIds.length < POST_TARGETS) {
    const page = expectOk(
      'list conversations',
      await call(baseUrl, `${API}/conversations?status=open&limit=100&cursor=${encodeURIComponent(cursor)}`, {
        headers: auth,
      }),
    );
    const more = (page.data ?? []) as typeof items;
    for (const c of more) {
      if (c.messageCount > 0 && c.subject !== HOT_SUBJECT && c.channel !== 'whatsapp') postIds.push(c.id);
    }
    cursor = page.meta?.nextCursor;
  }
  postIds.length = Math.min(postIds.length, POST_TARGETS);
  if (postIds.length === 0) throw new Error('no open non-WhatsApp conversation with messages was found');

  const guests = expectOk('list guests', await call(baseUrl, `${API}/guests?limit=20`, { headers: auth }));
  const guestIds = ((guests.data ?? []) as { id: string }[]).map((g) => g.id);
  const names = ((guests.data ?? []) as { name: string }[]).map((g) => g.name.split(/\s+/).at(-1)!.toLowerCase());
  const guestSearch = names.find((n) => n.length >= 4) ?? names[0];
  if (guestSearch === undefined) throw new Error('no guest was found to search for');
  return { conversationIds, postIds, guestSearch, guestIds };
}

export interface Probe {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** For lists: meta.total must be a number. */
  list: boolean;
}

/** One request as the load will send it: a scenario measuring 4xx answers would be worthless. */
export async function probe(baseUrl: string, token: string, p: Probe): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (p.body !== undefined) headers['content-type'] = 'application/json';
  const body = expectOk(
    `${p.method} ${p.path}`,
    await call(baseUrl, p.path, { method: p.method, headers, body: p.body }),
  );
  if (p.list && typeof body.meta?.total !== 'number') throw new Error(`${p.method} ${p.path}: meta.total is missing`);
}

/**
 * Waits until the server answers /healthz promptly again. A scenario that overloads it (a slow
 * search at 1M rows) leaves requests queued after their clients gave up, and the server works
 * through them all; the next scenario must not be charged for that backlog. Returns seconds waited.
 */
export async function settle(baseUrl: string, maxS = 180): Promise<number> {
  const started = performance.now();
  let prompt = 0;
  while (prompt < 3 && (performance.now() - started) / 1000 < maxS) {
    const t0 = performance.now();
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(30_000) });
      await res.arrayBuffer();
      prompt = res.ok && performance.now() - t0 < 20 ? prompt + 1 : 0;
    } catch {
      prompt = 0;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return (performance.now() - started) / 1000;
}
