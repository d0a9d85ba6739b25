/** Defaults to 256 entries. */
export const DEFAULT_GRAMMAR_CACHE_SIZE = 256;

/**
 * Least-recently-used cache of built grammars, keyed by the text they were built from (schema JSON,
 * strictness, tool list), so a client that sends the same schema on every request pays for the conversion
 * once. Failures are not cached. Main thread.
 */
export class GrammarCache {
  private readonly entries = new Map<string, string>();

  constructor(private readonly capacity = DEFAULT_GRAMMAR_CACHE_SIZE) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string, build: () => string): string {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const grammar = build();
    this.entries.set(key, grammar);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return grammar;
  }
}
