import { indexedRecords } from './database.ts';
import type { RecordStore, RecordTable, RecordTables } from './record-store.ts';

/** A record that lives in one workspace of one account (an app, an inference project). */
export interface WorkspaceOwned {
  id: string;
  accountId: string;
  workspaceId: string;
}

/** Where a repository's records are: their table, their index kind (`[kind, workspaceId, id]`), their list order. */
export interface WorkspaceScopedTable<V> {
  table: (dbs: RecordTables) => RecordTable<V>;
  kind: string;
  order: (a: V, b: V) => number;
}

/**
 * The reads every repository of workspace-owned records has: one record within a workspace of an account (anything
 * else reads as missing), one by id alone (internal callers), and a workspace's list in the repository's order.
 * Main thread.
 */
export abstract class WorkspaceScopedReads<V extends WorkspaceOwned> {
  constructor(
    protected readonly store: RecordStore,
    private readonly scoped: WorkspaceScopedTable<V>,
  ) {}

  /** The record when it is in that workspace of that account; undefined otherwise. */
  get(accountId: string, workspaceId: string, id: string): V | undefined {
    const r = this.scoped.table(this.store.dbs).get(id);
    return r !== undefined && r.accountId === accountId && r.workspaceId === workspaceId ? r : undefined;
  }

  /** Any record by id (internal use: provisioning, the app proxy and supervisor). */
  getById(id: string): V | undefined {
    return this.scoped.table(this.store.dbs).get(id);
  }

  /** A workspace's records that belong to the account (the caller checks the workspace is the account's). */
  list(accountId: string, workspaceId: string): V[] {
    const { table, kind, order } = this.scoped;
    return indexedRecords(this.store.dbs.index, table(this.store.dbs), kind, workspaceId)
      .filter((r) => r.accountId === accountId)
      .sort(order);
  }
}
