import type { RecordKey } from '../record-store.ts';

/**
 * LMDB's key order (lmdb-js ordered-binary), for the in-memory mirror of the PostgreSQL store: strings by
 * Unicode code point (the order of their UTF-8 bytes), numbers before strings, arrays element by element with
 * a prefix before any longer key it starts (so `['key', a]` < `['key', a, id]` < `['key', a, '\uffff']`).
 */
export function compareKeys(a: RecordKey | string | number, b: RecordKey | string | number): number {
  if (Array.isArray(a) || Array.isArray(b)) {
    const x = Array.isArray(a) ? a : [a];
    const y = Array.isArray(b) ? b : [b];
    const n = Math.min(x.length, y.length);
    for (let i = 0; i < n; i++) {
      const c = compareParts(x[i]!, y[i]!);
      if (c !== 0) return c;
    }
    return x.length - y.length;
  }
  return compareParts(a, b);
}

function compareParts(a: string | number, b: string | number): number {
  if (typeof a === 'number' || typeof b === 'number') {
    if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === 'number' ? -1 : 1;
  }
  return compareCodePoints(a, b);
}

/** String order by code point: UTF-16 order except that surrogates (astral characters) sort after U+E000..U+FFFF. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** A key as one string: the PostgreSQL `records.key` column and the mirror's map key (arrays as JSON). */
export function encodeKey(key: RecordKey): string {
  return typeof key === 'string' ? key : JSON.stringify(key);
}

/** The inverse of encodeKey for a table whose keys are arrays (`arrayKeys`) or strings. */
export function decodeKey(text: string, arrayKeys: boolean): RecordKey {
  return arrayKeys ? (JSON.parse(text) as (string | number)[]) : text;
}
