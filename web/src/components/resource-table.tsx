import type { ComponentChildren } from 'preact';
import type { Loaded } from '../hooks.ts';
import { ErrorNote } from './ui.tsx';

/** One column: its header, and what a row shows in it (`class` goes on every cell of the column). */
export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/** How a row is keyed: by `rowKey`, which records with an `id` may leave out (their id keys them). */
type RowKeyOf<T> = T extends { id: string } ? { rowKey?: (row: T) => string } : { rowKey: (row: T) => string };

/**
 * The dashboard's list of records, as `useLoad` gives it: the load's error or else `actionError` (a failed action
 * on the rows: delete, revoke), then a table named `label`, a header row of `columns`, one row a record, and an
 * actions column (its header for screen readers only) when `actions` is given. While the list loads the body is
 * empty; with no rows it says `empty` (when given).
 */
export function ResourceTable<T>({
  label,
  columns,
  list,
  actionError,
  rowKey = (row) => (row as { id: string }).id, // RowKeyOf<T> leaves it out only where T has an id
  empty,
  actions,
}: {
  label: string;
  columns: Column<T>[];
  list: Loaded<{ data: T[] }>;
  actionError?: unknown;
  empty?: string;
  actions?: (row: T) => ComponentChildren;
} & RowKeyOf<T>) {
  const rows = list.data?.data;
  const width = columns.length + (actions ? 1 : 0);
  return (
    <>
      <ErrorNote error={list.error ?? actionError} />
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.header}>
                {c.header}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {empty && rows?.length === 0 && (
            <tr>
              <td colSpan={width} class="muted">
                {empty}
              </td>
            </tr>
          )}
          {rows?.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td key={c.header} class={c.class}>
                  {c.cell(row)}
                </td>
              ))}
              {actions && <td class="actions">{actions(row)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
