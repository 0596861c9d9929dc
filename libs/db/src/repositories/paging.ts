/** Keyset paging over the monotonic `seq` column: stable under inserts, no OFFSET scans. */
export interface PageQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** seq of the cursor item; the page starts after it in the asked order. */
  afterSeq?: bigint;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

export function seqCondition(query: PageQuery): { seq?: { gt: bigint } | { lt: bigint } } {
  if (query.afterSeq === undefined) return {};
  return { seq: query.order === 'asc' ? { gt: query.afterSeq } : { lt: query.afterSeq } };
}

/** Reads one item more than asked to learn has_more without a count. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}

/**
 * A long listing read one keyset page at a time as the consumer asks. Between pages it holds only its
 * cursor, never rows, so a batch the consumer has serialised dies young instead of being promoted to the
 * old generation while the response drains (where it would make the heap grow with the listing's length).
 */
export class KeysetBatches<T extends { seq: bigint }> {
  #pending: Page<T> | null;
  #after: bigint | undefined;
  #done = false;

  constructor(
    first: Page<T>,
    private readonly readAfter: (afterSeq: bigint) => Promise<Page<T>>,
  ) {
    this.#pending = first;
  }

  /** The next batch, or null at the end. */
  async next(): Promise<T[] | null> {
    let page = this.#pending;
    this.#pending = null;
    if (!page) {
      if (this.#done || this.#after === undefined) return null;
      page = await this.readAfter(this.#after);
    }
    this.#done = !page.hasMore || page.items.length === 0;
    this.#after = page.items.at(-1)?.seq;
    return page.items.length ? page.items : null;
  }
}
