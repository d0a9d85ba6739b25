import type { RecordKey } from '../record-store.ts';
import { deepFreeze } from '../deep-freeze.ts';
import { decodeKey } from './key-order.ts';
import type { MirrorTable } from './mirror-table.ts';
import { ARRAY_KEYED, type ChangeRow, TABLE_NAMES, type TableName } from './postgres-store-types.ts';

/** The change rows start past what this replica has seen (removals pruned since): only a full reload catches it up. */
export class ReloadNeeded extends Error {}

/**
 * Applies change rows (ordered by seq, from CHANGES_SQL) to the mirror and returns the new last seen seq; `full`:
 * they are every record (a load), which replaces each table. Throws ReloadNeeded when the rows' horizon is past
 * `lastSeen`. Values are deep-frozen; rows of a table this Hearth does not know (a newer one wrote them) are skipped.
 */
export function applyChangeRows(
  mirror: Record<TableName, MirrorTable>,
  rows: ChangeRow[],
  lastSeen: number,
  full: boolean,
): number {
  if (rows.length === 0) return lastSeen;
  const horizon = Number(rows[0]!.horizon);
  if (!full && horizon > lastSeen) throw new ReloadNeeded();
  let top = Math.max(lastSeen, horizon);
  if (full) {
    const byTable = new Map<string, [RecordKey, unknown][]>(TABLE_NAMES.map((t) => [t, []]));
    for (const r of rows) {
      if (r.seq === null) continue;
      top = Math.max(top, Number(r.seq));
      if (r.value !== null) byTable.get(r.tbl!)?.push([decodeKey(r.key!, r.tbl === ARRAY_KEYED), deepFreeze(r.value)]);
    }
    for (const t of TABLE_NAMES) mirror[t].replaceAll(byTable.get(t)!);
  } else {
    for (const r of rows) {
      if (r.seq === null) continue;
      top = Math.max(top, Number(r.seq));
      const table = mirror[r.tbl as TableName] as MirrorTable | undefined; // a kind a newer Hearth wrote: not ours
      table?.set(decodeKey(r.key!, r.tbl === ARRAY_KEYED), r.value === null ? undefined : deepFreeze(r.value));
    }
  }
  return top;
}
