// Owns what a search's text means, the same on both stores (docs/search.md): its words (letters
// and digits; every operator, quote and punctuation mark is a separator, so none reaches a query
// language), the FTS5 and tsquery expressions made from them, and the highlight snippet.

// Letters and digits as the tokenizers see them; a word starts with one so it is never just a
// combining mark (which would make an empty FTS5 phrase).
const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;
/** More words narrow nothing a reader would notice and each one costs the index a lookup. */
export const MAX_WORDS = 16;

export function searchWords(text: string): string[] {
  return (text.match(WORD) ?? []).slice(0, MAX_WORDS);
}

/**
 * FTS5: every word as a quoted phrase (so NEAR, AND, `*`, `-` or `column:` in it stay literal), the
 * last one as a prefix, all in the `content` column; then, when the search is narrowed to an
 * assignee or a channel, those scope words in the `scope` column (migration 034), so FTS5
 * intersects them with the words inside the index. Words hold no quote: quoting is all the
 * escaping they need.
 */
export function ftsMatch(words: readonly string[], scope: { assignee?: string; channel?: string } = {}): string {
  const content = `content : (${words.map((w, i) => `"${w}"${i === words.length - 1 ? ' *' : ''}`).join(' ')})`;
  const narrow = [
    ...(scope.assignee === undefined ? [] : [`a${scope.assignee.replaceAll('_', '')}`]),
    ...(scope.channel === undefined ? [] : [`c${scope.channel}`]),
  ];
  if (narrow.length === 0) return content;
  return `${content} AND scope : (${narrow.map((w) => `"${w.replaceAll('"', '""')}"`).join(' ')})`;
}

/** PostgreSQL: the words ANDed as quoted operands of to_tsquery, the last one as a prefix (`:*`). */
export function tsQuery(words: readonly string[]): string {
  return words.map((w, i) => `'${w}'${i === words.length - 1 ? ':*' : ''}`).join(' & ');
}

/** A word as both indexes compare it: lower case, accents (combining marks after NFD) removed. */
export function fold(word: string): string {
  return word.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

const NON_ASCII = /[^\t\n\r\x20-\x7e]/;
const ASCII_WORD = /[a-z0-9]+/g;

/** BM25's term-frequency saturation and length weight (FTS5's and most engines' defaults). */
const K1 = 1.2;
const B = 0.75;

/**
 * The relevance of each of `contents` to the search's words, higher for a better match: BM25
 * without the rarity of a word (so the same words in the same message rank alike on both stores,
 * and the rank needs nothing but the messages ranked). Each word counts the message's words equal
 * to it (the last one: starting with it), saturating; a longer message than the mean of those
 * ranked weighs less. Words compare folded, as the indexes compare them.
 */
export function relevance(contents: readonly string[], words: readonly string[]): number[] {
  const folded = words.map(fold);
  const last = folded.length - 1;
  const counts: number[][] = [];
  const lengths: number[] = [];
  let sum = 0;
  for (const content of contents) {
    // Printable ASCII text (most) folds by lower-casing alone; its words are runs of [a-z0-9].
    const ascii = !NON_ASCII.test(content);
    const tokens = (ascii ? content.toLowerCase().match(ASCII_WORD) : fold(content).match(WORD)) ?? [];
    const tf = folded.map(() => 0);
    for (const t of tokens) {
      for (let i = 0; i < folded.length; i++) {
        if (i === last ? t.startsWith(folded[i]!) : t === folded[i]) tf[i]!++;
      }
    }
    counts.push(tf);
    lengths.push(tokens.length);
    sum += tokens.length;
  }
  const mean = Math.max(1, sum / Math.max(1, contents.length));
  return counts.map((tf, k) => {
    const norm = K1 * (1 - B + (B * lengths[k]!) / mean);
    return tf.reduce((score, n) => score + (n * (K1 + 1)) / (n + norm), 0);
  });
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** Characters of content a snippet shows at most (about two lines of a result list). */
export const SNIPPET_CHARS = 200;
/** Characters kept before the first match, so it is read in context. */
const LEAD = 60;

/**
 * The snippet of `content` around its first match: HTML-escaped text in which each word matching
 * the search is wrapped in `<mark>…</mark>` (a word equal to a search word, or starting with the
 * last one), cut at word boundaries with `…` where content was left out. Escaped throughout, so the
 * only markup in it is `<mark>`.
 */
export function highlight(content: string, words: readonly string[]): string {
  const folded = words.map(fold);
  const last = folded[folded.length - 1] ?? '';
  const whole = new Set(folded.slice(0, -1));
  const hits: [number, number][] = [];
  for (const m of content.matchAll(WORD)) {
    const w = fold(m[0]);
    if (whole.has(w) || (last !== '' && w.startsWith(last))) hits.push([m.index, m.index + m[0].length]);
  }
  let start = 0;
  let end = content.length;
  if (content.length > SNIPPET_CHARS) {
    start = Math.max(0, (hits[0]?.[0] ?? 0) - LEAD);
    end = Math.min(content.length, start + SNIPPET_CHARS);
    start = Math.max(0, Math.min(start, end - SNIPPET_CHARS));
    // Whole words only: move the cuts out of any word they fall inside.
    if (start > 0) start = wordEdge(content, start, 1);
    if (end < content.length) end = wordEdge(content, end, -1);
    while (start < end && /\s/.test(content[start]!)) start++;
    while (end > start && /\s/.test(content[end - 1]!)) end--;
    // Never between the two halves of a character outside the BMP (an emoji).
    if (/[\uDC00-\uDFFF]/.test(content[start] ?? '')) start++;
    if (/[\uD800-\uDBFF]/.test(content[end - 1] ?? '')) end--;
  }
  let out = start > 0 ? '…' : '';
  let at = start;
  for (const [a, b] of hits) {
    if (a < start || b > end) continue;
    out += `${escapeHtml(content.slice(at, a))}<mark>${escapeHtml(content.slice(a, b))}</mark>`;
    at = b;
  }
  out += escapeHtml(content.slice(at, end));
  return end < content.length ? `${out}…` : out;
}

/** The nearest position at or beyond `i` (in direction `dir`) that is not inside a word. */
function wordEdge(s: string, i: number, dir: 1 | -1): number {
  const inWord = (k: number) =>
    k > 0 && k < s.length && /[\p{L}\p{N}\p{M}]/u.test(s[k - 1]!) && /[\p{L}\p{N}\p{M}]/u.test(s[k]!);
  let k = i;
  while (inWord(k) && Math.abs(k - i) < 40) k += dir;
  return inWord(k) ? i : k;
}
