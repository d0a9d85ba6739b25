import type { RangeOptions, RecordKey } from '../record-store.ts';
import { compareKeys, encodeKey } from './key-order.ts';

/**
 * One table of the PostgreSQL store's in-memory mirror: its committed records by key, and the keys in LMDB's
 * order (key-order.ts) for range reads. Values are deep-frozen JSON (as every replica reads them back from
 * PostgreSQL), so a caller that mutated a record it read would throw instead of changing the mirror unseen.
 * Knows nothing of PostgreSQL or transactions (postgres-store.ts does).
 */
export class MirrorTable<V = unknown> {
  private readonly values = new Map<string, V>();
  /** Every key of `values`, sorted by compareKeys. */
  private keys: RecordKey[] = [];

  get size(): number {
    return this.values.size;
  }

  get(key: RecordKey): V | undefined {
    return this.values.get(encodeKey(key));
  }

  /** Sets (value) or removes (undefined) one record; returns the value it replaced. */
  set(key: RecordKey, value: V | undefined): V | undefined {
    const enc = encodeKey(key);
    const before = this.values.get(enc);
    if (value === undefined) {
      if (before === undefined) return undefined;
      this.values.delete(enc);
      const at = this.search(key);
      if (at < this.keys.length && compareKeys(this.keys[at]!, key) === 0) this.keys.splice(at, 1);
      return before;
    }
    if (before === undefined) this.keys.splice(this.search(key), 0, key);
    this.values.set(enc, value);
    return before;
  }

  /** Replaces every record at once (a full load). */
  replaceAll(entries: Iterable<[RecordKey, V]>): void {
    this.values.clear();
    this.keys = [];
    for (const [key, value] of entries) {
      if (!this.values.has(encodeKey(key))) this.keys.push(key);
      this.values.set(encodeKey(key), value);
    }
    this.keys.sort(compareKeys);
  }

  /** Entries in key order within [start, end), at most `limit`: a snapshot array (safe to write while iterating). */
  range(options: RangeOptions<RecordKey> = {}): { key: RecordKey; value: V }[] {
    const out: { key: RecordKey; value: V }[] = [];
    const limit = options.limit ?? Infinity;
    for (
      let i = options.start === undefined ? 0 : this.search(options.start);
      i < this.keys.length && out.length < limit;
      i++
    ) {
      const key = this.keys[i]!;
      if (options.end !== undefined && compareKeys(key, options.end) >= 0) break;
      out.push({ key, value: this.values.get(encodeKey(key))! });
    }
    return out;
  }

  /** The index of the first key >= `key`. */
  private search(key: RecordKey): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
