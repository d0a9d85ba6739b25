import type { ComponentChildren } from 'preact';

/** One column: its header, and what a row shows in it (`class` goes on every cell of the column). */
export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/**
 * The dashboard's list of records: a table named `label`, a header row of `columns`, one row a record, and an
 * actions column (its header for screen readers only) when `actions` is given. While `rows` is undefined
 * (still loading) the body is empty; with no rows it says `empty` (when given).
 */
export function ResourceTable<T>({
  label,
  columns,
  rows,
  rowKey,
  empty,
  actions,
}: {
  label: string;
  columns: Column<T>[];
  rows: T[] | undefined;
  rowKey: (row: T) => string;
  empty?: string;
  actions?: (row: T) => ComponentChildren;
}) {
  const width = columns.length + (actions ? 1 : 0);
  return (
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
  );
}
