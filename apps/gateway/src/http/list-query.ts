import { ApiError } from '@app/common';

export interface ListQuery {
  limit: number;
  order: 'asc' | 'desc';
  after?: string;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** A query parameter given at most once (a repeated one is 400 naming it). */
export function singleQueryValue(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw ApiError.invalid(`${name} must be given once.`, name);
  return value;
}

/** Parses `limit` (1..1000), `order` (asc|desc) and `after` of a list request (docs/api.md §1). */
export function parseListQuery(
  query: Record<string, unknown>,
  defaults: { order: 'asc' | 'desc' } = { order: 'desc' },
): ListQuery {
  const limitRaw = singleQueryValue(query, 'limit');
  let limit = DEFAULT_LIMIT;
  if (limitRaw !== undefined) {
    if (!/^\d{1,7}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > MAX_LIMIT)
      throw ApiError.invalid(`limit must be an integer from 1 to ${MAX_LIMIT}.`, 'limit');
    limit = Number(limitRaw);
  }
  const orderRaw = singleQueryValue(query, 'order');
  if (orderRaw !== undefined && orderRaw !== 'asc' && orderRaw !== 'desc')
    throw ApiError.invalid('order must be asc or desc.', 'order');
  const after = singleQueryValue(query, 'after');
  return { limit, order: (orderRaw as 'asc' | 'desc' | undefined) ?? defaults.order, after: after || undefined };
}

export interface ListBody<T extends { id: string }> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export function listBody<T extends { id: string }>(data: T[], hasMore: boolean): ListBody<T> {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}
