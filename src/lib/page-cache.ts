// Owns the list page cache (docs/decisions.md, "Version-checked list pages"): a page's answer
// kept under the store's data version (Store.dataVersion: SQLite's change counters, PostgreSQL's
// snapshot), so it is answered again only while nothing committed anywhere since it was read, and
// only until the first moment that could change it by time alone. A page is kept only when its key
// missed before at the same version (second-miss admission): under a mix of reads and writes most
// pages are never asked twice between two writes, and those pay for nothing but the lookup.
// Only the page's bytes are kept; authentication, scopes, rate limits and every header still run
// per request.

/** A kept page: the answer's body and the cursor its `Link` is made from. */
export interface KeptPage {
  readonly body: string;
  readonly nextCursor: string | null;
}

interface Entry extends KeptPage {
  readonly version: string;
  /** Epoch ms from which the page may differ by time alone (an SLA moment, the hotel's next day). */
  readonly until: number;
}

export interface PageCacheLimits {
  /** Pages kept at most. */
  entries: number;
  /** Characters of kept bodies at most (a body is kept as the string that was sent). */
  chars: number;
}

export const DEFAULT_PAGE_CACHE_LIMITS: PageCacheLimits = { entries: 1000, chars: 8_000_000 };

export class PageCache {
  /** By key, least recently used first (a Map iterates in insertion order). */
  private readonly pages = new Map<string, Entry>();
  /** The version each key last missed at: a second miss at the same one admits the page. */
  private readonly missed = new Map<string, string>();
  private chars = 0;
  /** Counts since start: answered from the cache, missed, and kept. */
  private readonly counts = { hits: 0, misses: 0, kept: 0 };

  constructor(private readonly limits: PageCacheLimits = DEFAULT_PAGE_CACHE_LIMITS) {}

  /** The page kept for `key` at `version`, if it is still good at `now` (epoch ms). */
  get(key: string, version: string, now: number): KeptPage | undefined {
    const e = this.pages.get(key);
    if (e === undefined) return undefined;
    if (e.version !== version || now >= e.until) {
      this.drop(key, e);
      return undefined;
    }
    this.pages.delete(key);
    this.pages.set(key, e);
    this.counts.hits++;
    return e;
  }

  /**
   * Records a miss of `key` at `version`; true when it missed at that same version before, so the
   * page about to be read is worth keeping.
   */
  missAdmits(key: string, version: string): boolean {
    this.counts.misses++;
    if (this.missed.get(key) === version) {
      this.missed.delete(key);
      return true;
    }
    // Keys are few (a list's filters and pages per visibility); the bound only guards the map.
    if (this.missed.size >= this.limits.entries * 4) this.missed.clear();
    this.missed.set(key, version);
    return false;
  }

  /** Keeps `page` for `key` at `version` until `until` (epoch ms), evicting the least recently used. */
  put(key: string, version: string, page: KeptPage, until: number): void {
    if (page.body.length > this.limits.chars) return;
    const old = this.pages.get(key);
    if (old !== undefined) this.drop(key, old);
    this.pages.set(key, { body: page.body, nextCursor: page.nextCursor, version, until });
    this.counts.kept++;
    this.chars += page.body.length;
    for (const [k, e] of this.pages) {
      if (this.pages.size <= this.limits.entries && this.chars <= this.limits.chars) break;
      this.drop(k, e);
    }
  }

  /** Pages kept now and their characters, and the counts since start (tests, the bench). */
  size(): { entries: number; chars: number; hits: number; misses: number; kept: number } {
    return { entries: this.pages.size, chars: this.chars, ...this.counts };
  }

  private drop(key: string, e: Entry): void {
    this.pages.delete(key);
    this.chars -= e.body.length;
  }
}
