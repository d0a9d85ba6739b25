import { keyFits } from '../database.ts';
import type { RangeOptions, RecordKey, RecordTable } from '../record-store.ts';
import type { MirrorTable } from './mirror-table.ts';
import type { TableName } from './postgres-store-types.ts';

/** What a table needs of its store (PostgresStore): staging a write in the running transaction, or running one. */
export interface TableWriter {
  readonly inTransaction: boolean;
  stage(tbl: TableName, key: RecordKey, value: unknown): boolean;
  transaction<T>(fn: () => T): Promise<T>;
  transactionSync<T>(fn: () => T): T;
}

/** One table of the store: reads from the mirror, writes staged in (or run as) a transaction. */
export class PostgresTable implements RecordTable<unknown, RecordKey> {
  constructor(
    private readonly store: TableWriter,
    private readonly name: TableName,
    private readonly rows: MirrorTable,
  ) {}

  get(key: RecordKey): unknown {
    return keyFits(key) ? this.rows.get(key) : undefined;
  }

  put(key: RecordKey, value: unknown): Promise<boolean> | boolean {
    if (!keyFits(key)) throw new Error('refusing a record key over MAX_KEY_BYTES');
    if (this.store.inTransaction) return (this.store.stage(this.name, key, value), true);
    return this.store.transaction(() => (this.store.stage(this.name, key, value), true));
  }

  remove(key: RecordKey): Promise<boolean> | boolean {
    if (!keyFits(key)) return false;
    if (this.store.inTransaction) return this.store.stage(this.name, key, undefined);
    return this.store.transaction(() => this.store.stage(this.name, key, undefined));
  }

  putSync(key: RecordKey, value: unknown): void {
    if (!keyFits(key)) throw new Error('refusing a record key over MAX_KEY_BYTES');
    if (this.store.inTransaction) this.store.stage(this.name, key, value);
    else this.store.transactionSync(() => this.store.stage(this.name, key, value));
  }

  removeSync(key: RecordKey): boolean {
    if (!keyFits(key)) return false;
    if (this.store.inTransaction) return this.store.stage(this.name, key, undefined);
    return this.store.transactionSync(() => this.store.stage(this.name, key, undefined));
  }

  getRange(options: RangeOptions<RecordKey> = {}): Iterable<{ key: RecordKey; value: unknown }> {
    if (!keyFits(options.start) || !keyFits(options.end)) return [];
    return this.rows.range(options);
  }

  getKeys(options: RangeOptions<RecordKey> = {}): Iterable<RecordKey> {
    if (!keyFits(options.start) || !keyFits(options.end)) return [];
    return this.rows.range(options).map((e) => e.key);
  }
}
