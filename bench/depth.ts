// Owns the depth figures (targets: docs/performance.md §3): for each list, timed from the client one request at a time on
// a kept-alive connection: the first page, a page past the end,
// the page at 80 % depth, the cursor page at that depth (its cursor taken from the page before),
// and a walk of the whole list by cursor, 100 rows a page, in rows per second.
import { Agent } from 'node:http';
import { type Answer, send } from './http-load.js';

const API = '/api/v1';
/** Each figure is the median of this many requests, after one untimed. */
const REPEATS = 5;
const PAGE = 20;
const WALK_LIMIT = 100;

export interface DepthList {
  id: string;
  label: string;
  path: string;
}

export interface DepthFigures {
  id: string;
  label: string;
  rows: number;
  firstMs: number;
  pastEndMs: number;
  deepMs: number;
  deepPage: number;
  cursorMs: number;
  walkRows: number;
  /** False when --walk-rows stopped the walk early. */
  walkWhole: boolean;
  walkS: number;
  walkRowsPerSec: number;
  errors: string[];
}

export function depthLists(hotConversationId: string): DepthList[] {
  return [
    { id: 'conversations', label: 'conversations', path: `${API}/conversations` },
    { id: 'guests', label: 'guests', path: `${API}/guests` },
    { id: 'tasks', label: 'tasks', path: `${API}/tasks` },
    {
      id: 'messages',
      label: 'messages of one conversation',
      path: `${API}/conversations/${hotConversationId}/messages`,
    },
  ];
}

interface Meta {
  total?: number;
  pages?: number;
  nextCursor?: string | null;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** `walkLimit`: stop the walk after this many rows (its rate is then of those; cursor pages cost the same at any depth). */
export async function measureDepth(
  baseUrl: string,
  token: string,
  list: DepthList,
  walkLimit = Number.POSITIVE_INFINITY,
): Promise<DepthFigures> {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { authorization: `Bearer ${token}` };
  const errors: string[] = [];
  const get = async (query: string): Promise<{ ms: number; meta: Meta; items: number }> => {
    const t0 = performance.now();
    const a: Answer = await send(base, agent, { method: 'GET', path: `${list.path}?${query}`, headers });
    const ms = performance.now() - t0;
    if (a.status !== 200) {
      errors.push(`${query}: ${a.status} ${a.body.slice(0, 120)}`);
      return { ms, meta: {}, items: 0 };
    }
    const body = JSON.parse(a.body) as { data: unknown[]; meta: Meta };
    return { ms, meta: body.meta, items: body.data.length };
  };
  const timed = async (query: string) => {
    await get(query);
    const runs: number[] = [];
    for (let i = 0; i < REPEATS; i++) runs.push((await get(query)).ms);
    return median(runs);
  };
  try {
    const first = await get(`limit=${PAGE}`);
    const rows = first.meta.total ?? 0;
    const pages = first.meta.pages ?? 1;
    const firstMs = await timed(`limit=${PAGE}`);
    const pastEndMs = await timed(`limit=${PAGE}&page=${pages + 1000}`);
    const deepPage = Math.max(2, Math.floor(pages * 0.8));
    const deepMs = await timed(`limit=${PAGE}&page=${deepPage}`);
    // The cursor that leads to the page at 80 % depth: the one the page before it hands out.
    const before = await get(`limit=${PAGE}&page=${deepPage - 1}`);
    const cursor = before.meta.nextCursor;
    const cursorMs = cursor ? await timed(`limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`) : Number.NaN;
    if (!cursor) errors.push(`page ${deepPage - 1} gave no nextCursor`);

    let walkRows = 0;
    const t0 = performance.now();
    let page = await get(`limit=${WALK_LIMIT}`);
    walkRows += page.items;
    while (page.meta.nextCursor && walkRows < walkLimit) {
      page = await get(`limit=${WALK_LIMIT}&cursor=${encodeURIComponent(page.meta.nextCursor)}`);
      walkRows += page.items;
      if (errors.length > 0) break;
    }
    const walkS = (performance.now() - t0) / 1000;
    if (walkRows !== rows && walkRows < walkLimit) errors.push(`the walk saw ${walkRows} rows of ${rows}`);
    return {
      id: list.id,
      label: list.label,
      rows,
      firstMs,
      pastEndMs,
      deepMs,
      deepPage,
      cursorMs,
      walkRows,
      walkWhole: walkRows === rows,
      walkS,
      walkRowsPerSec: walkRows / walkS,
      errors,
    };
  } finally {
    agent.destroy();
  }
}

export function formatDepth(figures: DepthFigures[]): string {
  const head = `${'list'.padEnd(30)}${'rows'.padStart(11)}${'first'.padStart(9)}${'past end'.padStart(10)}${'80 % page'.padStart(11)}${'cursor'.padStart(9)}${'walk rows/s'.padStart(13)}${'walk s'.padStart(8)}`;
  const lines = ['Depth (fresh reads, one at a time, median of 5, ms):', head, '-'.repeat(head.length)];
  for (const f of figures) {
    lines.push(
      `${f.label.padEnd(30)}${f.rows.toLocaleString('en-US').padStart(11)}${f.firstMs.toFixed(2).padStart(9)}` +
        `${f.pastEndMs.toFixed(2).padStart(10)}${f.deepMs.toFixed(2).padStart(11)}${f.cursorMs.toFixed(2).padStart(9)}` +
        `${Math.round(f.walkRowsPerSec).toLocaleString('en-US').padStart(13)}${f.walkS.toFixed(1).padStart(8)}`,
    );
    for (const e of f.errors) lines.push(`    error: ${e}`);
  }
  return lines.join('\n');
}
