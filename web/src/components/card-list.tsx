import { Fragment, type VNode } from 'preact';
import type { Loaded } from '../hooks.ts';

/**
 * The dashboard's list of records shown as cards (apps, inference projects), as `useLoad` gives it: one card a
 * record (`children`, keyed by `keyOf`), or `empty` when there is none; nothing while it loads. The load's error is
 * the page's to show (it may mean more than a failed list there).
 */
export function CardList<T>({
  list,
  empty,
  keyOf,
  children,
}: {
  list: Loaded<{ data: T[] }>;
  empty: string;
  keyOf: (row: T) => string;
  children: (row: T) => VNode;
}) {
  const rows = list.data?.data;
  if (rows?.length === 0) return <p class="muted">{empty}</p>;
  return (
    <>
      {rows?.map((row) => (
        <Fragment key={keyOf(row)}>{children(row)}</Fragment>
      ))}
    </>
  );
}
