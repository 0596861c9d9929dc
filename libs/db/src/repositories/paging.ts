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
