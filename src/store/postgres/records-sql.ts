/** The queries on `records` (migration 0001) that the store and the LMDB import share. */

/**
 * Every row with seq > $1 in seq order (tombstones too), each with the pruning horizon; one row with only the
 * horizon when there is none. $1 = -1: every record, for a (re)load. The horizon is read by its key: from the
 * table itself, never analyzed (one row), the planner guessed 2,040 rows, costed the join past `jit_above_cost`
 * and JIT-compiled every catch-up (4-20 ms each instead of 0.1-0.2 ms on loopback).
 */
export const CHANGES_SQL = `SELECT h.pruned_through::text AS horizon, r.tbl, r.key, r.value, r.seq::text AS seq
  FROM (SELECT pruned_through FROM records_horizon WHERE id = 1) h LEFT JOIN records r ON r.seq > $1::bigint
  ORDER BY r.seq`;

/** Puts ($3 = JSON text) and removes ($3 = NULL: a tombstone), each stamped with the next seq. */
export const UPSERT_SQL = `INSERT INTO records (tbl, key, value, seq, changed_at)
  SELECT t, k, v::json, nextval('hearth_record_seq'), now() FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(t, k, v, n) ORDER BY n
  ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value, seq = excluded.seq, changed_at = excluded.changed_at
  RETURNING seq::text AS seq`;

export const PRUNE_SQL = `WITH d AS (DELETE FROM records WHERE value IS NULL AND changed_at < now() - $1::interval RETURNING seq)
  UPDATE records_horizon SET pruned_through = GREATEST(pruned_through, (SELECT coalesce(max(seq), 0) FROM d))`;
