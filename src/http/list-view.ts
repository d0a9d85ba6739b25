import { invalidRequest } from '../errors/index.ts';

/** The envelope of every list the APIs answer: `{object: 'list', data}` (OpenAI's shape). */
export interface ListView<T> {
  object: 'list';
  data: T[];
}

export const listView = <T>(data: T[]): ListView<T> => ({ object: 'list', data });

/** A page of a list read with an `after` cursor (OpenAI's files, batches, input items). */
export interface CursorPage<T> extends ListView<T> {
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** `data` (items with string ids) as a page; `hasMore`: items follow the last one. */
export const cursorPage = <T extends { id?: unknown }>(data: T[], hasMore: boolean): CursorPage<T> => ({
  object: 'list',
  data,
  first_id: idOf(data[0]),
  last_id: idOf(data.at(-1)),
  has_more: hasMore,
});

const idOf = (item: { id?: unknown } | undefined): string | null => (typeof item?.id === 'string' ? item.id : null);

/** The query's `limit`: a whole number from 1 to `max`, 20 when absent; anything else is a 400 naming `limit`. */
export function pageLimit(q: URLSearchParams, max: number): number {
  const text = q.get('limit');
  // Decimal digits only: Number() would also read '0x2', '1e1' and ' 2 '.
  const limit = text === null ? 20 : /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > max)
    throw invalidRequest(`'limit' must be an integer from 1 to ${max}`, 'limit', 'invalid_value');
  return limit;
}

/** The query's `order`: 'asc' or 'desc' (the default); anything else is a 400 naming `order`. */
export function pageOrder(q: URLSearchParams): 'asc' | 'desc' {
  const order = q.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc')
    throw invalidRequest("'order' must be 'asc' or 'desc'", 'order', 'invalid_value');
  return order;
}
