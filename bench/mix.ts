// Owns the realistic mix (docs/performance.md §3): 20 staff and managers (the seeded demo accounts, each
// logged in, users sharing an account in turn), 80 % reads of conversations, messages, tasks and
// guests with random filters and shallow pages (some walking on by cursor), 20 % writes (messages,
// conversation status, task status), each staff member on the conversations and tasks assigned to
// them as the API allows. Random but repeatable: the same seed gives the same requests.
import { Agent } from 'node:http';
import { login } from './client.js';
import { HOT_SUBJECT } from './hot.js';
import { type Answer, type LoadRequest, send, type Workload } from './http-load.js';
import { seeded } from './inject-timing.js';

const API = '/api/v1';
export const MIX_USERS = 20;
const MANAGER = 'manager@demo.hotel';
const STAFF = ['housekeeping', 'frontdesk', 'maintenance', 'concierge', 'fnb'].flatMap((s) => [
  `${s}1@demo.hotel`,
  `${s}2@demo.hotel`,
]);
/** A cursor walk stops after this many pages (an integration's batch), then starts again. */
const WALK_PAGES = 50;

interface Account {
  manager: boolean;
  token: string;
  conversationIds: string[];
  /** Those free text may go to at any time: not WhatsApp (its 24-hour window answers 409 by design). */
  postIds: string[];
  taskIds: string[];
}

interface UserState {
  account: Account;
  /** The next cursor of the list this user walks, by list path. */
  walks: Map<string, { filter: string; cursor: string; pages: number }>;
}

interface Row {
  id: string;
  subject?: string | null;
  channel?: string;
}

async function rows(baseUrl: string, token: string, path: string): Promise<Row[]> {
  const res = await fetch(`${baseUrl}${API}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { data?: Row[] };
  // The depth figures' long conversation (bench/hot.ts) is left out: the mix is of typical ones.
  return (body.data ?? []).filter((r) => r.subject !== HOT_SUBJECT);
}

/** Logs in the manager and the ten staff members, with the conversations and tasks each may write. */
export async function mixAccounts(baseUrl: string, password: string): Promise<Account[]> {
  const out: Account[] = [];
  for (const email of [MANAGER, ...STAFF]) {
    const token = await login(baseUrl, email, password);
    const conversations = await rows(baseUrl, token, '/conversations?status=open&limit=100');
    const conversationIds = conversations.map((r) => r.id);
    const postIds = conversations.filter((r) => r.channel !== 'whatsapp').map((r) => r.id);
    const taskIds = (await rows(baseUrl, token, '/tasks?limit=100')).map((r) => r.id);
    if (postIds.length > 0) out.push({ manager: email === MANAGER, token, conversationIds, postIds, taskIds });
  }
  if (out.length === 0) throw new Error('the mix found no account with an open conversation');
  return out;
}

export function mixWorkload(accounts: Account[], o: { seed?: number }): Workload {
  const rand = seeded(o.seed ?? 20);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const users: UserState[] = Array.from({ length: MIX_USERS }, (_, u) => ({
    account: accounts[u % accounts.length]!,
    walks: new Map(),
  }));
  const kindOf = (u: UserState, path: string) =>
    `${u.account.manager ? 'manager' : 'staff'} GET ${path.slice(path.lastIndexOf('/'))}`;
  const headersOf = (u: UserState): Record<string, string> => ({
    authorization: `Bearer ${u.account.token}`,
  });
  /** A list read: on a walk, its next page by cursor; else a random filter and a shallow page. */
  const list = (u: UserState, path: string, filters: readonly string[]): LoadRequest => {
    const walk = u.walks.get(path);
    if (walk !== undefined && rand() < 0.7) {
      const q = `${walk.filter}${walk.filter === '' ? '' : '&'}limit=50&cursor=${encodeURIComponent(walk.cursor)}`;
      return { method: 'GET', path: `${path}?${q}`, headers: headersOf(u), kind: `${kindOf(u, path)} cursor` };
    }
    const filter = pick(filters);
    const page = 1 + Math.floor(rand() * 5);
    const limit = rand() < 0.2 ? 50 : 20;
    const q = `${filter}${filter === '' ? '' : '&'}limit=${limit}${page > 1 ? `&page=${page}` : ''}`;
    const shown = filter.replace(/=.*$/, '') || 'all';
    return { method: 'GET', path: `${path}?${q}`, headers: headersOf(u), kind: `${kindOf(u, path)} ${shown}` };
  };
  const next = (n: number): LoadRequest => {
    const u = users[n]!;
    const { conversationIds, postIds, taskIds } = u.account;
    const r = rand();
    if (r < 0.3) {
      return list(u, `${API}/conversations`, [
        '',
        'status=open',
        'status=pending',
        'channel=whatsapp',
        'status=open&channel=email',
      ]);
    }
    if (r < 0.48) {
      return {
        method: 'GET',
        path: `${API}/conversations/${pick(conversationIds)}/messages`,
        headers: headersOf(u),
        kind: 'GET messages',
      };
    }
    if (r < 0.64) {
      return list(u, `${API}/tasks`, [
        '',
        'status=open',
        'priority=high',
        'department=housekeeping',
        'status=in_progress',
      ]);
    }
    if (r < 0.8) return list(u, `${API}/guests`, ['', '', 'tag=vip', 'search=baker']);
    const json = { ...headersOf(u), 'content-type': 'application/json' };
    if (r < 0.9 || taskIds.length === 0) {
      const body = JSON.stringify({ content: 'Mix: your late checkout is confirmed.' });
      const path = `${API}/conversations/${pick(postIds)}/messages`;
      return { method: 'POST', path, headers: json, body, kind: 'POST message' };
    }
    if (r < 0.95) {
      const body = JSON.stringify({ status: rand() < 0.5 ? 'open' : 'pending' });
      const path = `${API}/conversations/${pick(conversationIds)}`;
      return { method: 'PATCH', path, headers: json, body, kind: 'PATCH conversation' };
    }
    const body = JSON.stringify({ status: pick(['open', 'in_progress', 'completed'] as const) });
    return { method: 'PATCH', path: `${API}/tasks/${pick(taskIds)}`, headers: json, body, kind: 'PATCH task' };
  };
  const seen = (n: number, req: LoadRequest, a: Answer): void => {
    if (req.method !== 'GET' || a.status !== 200) return;
    const path = req.path.slice(0, req.path.indexOf('?'));
    if (!path.endsWith('/conversations') && !path.endsWith('/tasks') && !path.endsWith('/guests')) return;
    const u = users[n]!;
    const query = new URLSearchParams(req.path.slice(path.length + 1));
    const onWalk = query.has('cursor');
    // Only a nextCursor is read from the answer: cheap next to parsing the whole page.
    const m = /"nextCursor":"([^"]+)"/.exec(a.body);
    const pages = onWalk ? (u.walks.get(path)?.pages ?? 0) + 1 : 1;
    if (m === null || pages > WALK_PAGES) {
      if (onWalk) u.walks.delete(path);
      return;
    }
    // A walk goes on; a fresh page starts one now and then (a sync job, an export).
    if (!onWalk && (u.walks.has(path) || rand() >= 0.1)) return;
    for (const k of ['page', 'limit', 'cursor']) query.delete(k);
    u.walks.set(path, { filter: query.toString(), cursor: m[1]!, pages });
  };
  return { users: MIX_USERS, next, seen };
}

/** Each request of the mix, sent alone: its latency (ms) and the size of its answer (bytes). */
export interface AloneSample {
  ms: number;
  bytes: number;
}

/**
 * The mix's requests one at a time on one kept-alive connection for `durationS` (the users in
 * turn, the same seed as the loops): what each costs with nothing queued beside it. The twin
 * (bench/twin.ts) replays these costs.
 */
export async function measureAlone(baseUrl: string, accounts: Account[], durationS: number): Promise<AloneSample[]> {
  const w = mixWorkload(accounts, {});
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const out: AloneSample[] = [];
  const deadline = performance.now() + durationS * 1000;
  for (let n = 0; performance.now() < deadline; n++) {
    const u = n % w.users;
    const r = w.next(u);
    const t0 = performance.now();
    const a = await send(base, agent, r);
    out.push({ ms: performance.now() - t0, bytes: Buffer.byteLength(a.body) });
    w.seen?.(u, r, a);
  }
  agent.destroy();
  return out;
}
