// Owns turning an e-mail's HTML into the text a message stores, with bounded work: one pass over
// the first MAX_HTML characters, stopping once the text is longer than a message holds. Every
// search moves forward from where the last one ended (a tag that never closes ends the markup),
// so no input costs more than a look at each character: a tag-stripping regex such as
// /<[^>]*>/g rescans to the end from every unclosed `<`, and a full HTML-to-text library spent
// seconds of CPU on a large body of them.

/** HTML past this many characters is not read: a guest's text comes long before it. */
export const MAX_HTML = 1024 * 1024;

/** Elements whose content is not text for a reader. */
const SKIPPED = new Set(['style', 'script', 'title', 'template']);
/** Elements that start a paragraph, or a line. */
const PARAGRAPH = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'table', 'ul', 'ol', 'hr', 'pre']);
const LINE = new Set(['br', 'div', 'tr', 'li', 'dt', 'dd', 'section', 'article', 'header', 'footer']);
const CELL = new Set(['td', 'th']);

const TAG = /<(\/?)([A-Za-z][A-Za-z0-9-]*)/y;

/** Named character references: the Latin-1 ones (code points 160–255, in order), then a few more. */
const LATIN1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute ' +
  'micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig ' +
  'Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash ' +
  'Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc ' +
  'euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml ' +
  'yacute thorn yuml';
const ENTITIES = new Map<string, string>([
  ...LATIN1.split(' ').map((name, i) => [name, String.fromCodePoint(160 + i)] as [string, string]),
  ['nbsp', ' '],
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
  ['hellip', '…'],
  ['mdash', '—'],
  ['ndash', '–'],
  ['lsquo', '‘'],
  ['rsquo', '’'],
  ['ldquo', '“'],
  ['rdquo', '”'],
  ['bull', '•'],
  ['euro', '€'],
  ['trade', '™'],
]);

function decode(text: string): string {
  return text.replace(
    /&(?:#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,7}));/g,
    (whole, dec, hex, name) => {
      if (name !== undefined) return ENTITIES.get(name) ?? whole;
      const n = dec !== undefined ? Number(dec) : Number.parseInt(hex, 16);
      return n > 0 && n <= 0x10ffff && (n < 0xd800 || n > 0xdfff) ? String.fromCodePoint(n) : whole;
    },
  );
}

/** Where each skipped element ends, found from where its start tag ended. */
const CLOSERS = new Map([...SKIPPED].map((name) => [name, new RegExp(`</${name}\\s*>`, 'gi')]));

/** The text of an HTML document for reading: paragraphs and lines kept, whitespace collapsed. */
export function htmlText(html: string, maxChars = 4096): string {
  const src = html.length > MAX_HTML ? html.slice(0, MAX_HTML) : html;
  // The text so far, as pieces: a break or a space is a piece of its own, so a run of them (a
  // thousand <br>) stays one piece and the length counts roughly what the reader will see.
  const parts: string[] = [];
  let length = 0;
  const push = (s: string) => {
    parts.push(s);
    length += s.length;
  };
  const blank = (s: string | undefined) => s === undefined || s === ' ' || s === '\n' || s === '\n\n';
  const space = (s: string) => {
    if (s !== ' ' || !blank(parts.at(-1))) push(s);
  };
  const brk = (s: '\n' | '\n\n') => {
    if (parts.length === 0) return;
    const last = parts.at(-1)!;
    if (blank(last)) {
      parts.pop();
      length -= last.length;
      if (last === '\n\n') s = last;
    }
    push(s);
  };
  let i = 0;
  while (i < src.length && length <= maxChars) {
    const lt = src.indexOf('<', i);
    const end = lt < 0 ? src.length : lt;
    if (end > i) space(decode(src.slice(i, end).replace(/\s+/g, ' ')));
    if (lt < 0) break;
    if (src.startsWith('<!--', lt)) {
      const close = src.indexOf('-->', lt + 4);
      if (close < 0) break;
      i = close + 3;
      continue;
    }
    TAG.lastIndex = lt;
    const m = TAG.exec(src);
    if (m === null) {
      // A `<` that opens no tag (`a < b`, `<3`): text.
      push('<');
      i = lt + 1;
      continue;
    }
    const gt = src.indexOf('>', TAG.lastIndex);
    if (gt < 0) {
      // A tag never closed: no `>` follows, so nothing after it is a tag either.
      space(decode(src.slice(lt).replace(/\s+/g, ' ')));
      break;
    }
    const name = m[2]!.toLowerCase();
    i = gt + 1;
    const closer = m[1] === '' ? CLOSERS.get(name) : undefined;
    if (closer !== undefined) {
      closer.lastIndex = i;
      const close = closer.exec(src);
      if (close === null) break;
      i = close.index + close[0].length;
    } else if (PARAGRAPH.has(name)) brk('\n\n');
    else if (LINE.has(name)) brk('\n');
    else if (CELL.has(name)) space(' ');
  }
  return parts
    .join('')
    .replace(/[ \t\u00a0]*\n[ \t\u00a0]*/g, '\n')
    .replace(/[ \t\u00a0]{2,}/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
