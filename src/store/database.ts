import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';

/**
 * The LMDB environment under `<dataDir>/records`. One named database per record kind plus index
 * databases for secondary lookups. LMDB is multi-process safe: the `hearth` CLI and a running server may
 * use the same data dir at once. Writes are awaited to commit (durable: a record acknowledged before a
 * `kill -9` is there after restart). Lifetime: one per process; `close()` is idempotent.
 */
export interface HearthDatabases {
  accounts: Database<AccountRecord, string>;
  apiKeys: Database<ApiKeyRecord, string>;
  workspaces: Database<WorkspaceRecord, string>;
  projects: Database<ProjectRecord, string>;
  /** Secondary indexes, keyed `[kind, ownerId, recordId]` -> true. */
  index: Database<true, (string | number)[]>;
}

export interface AccountRecord {
  id: string;
  name: string;
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  secretHash: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export type YamState = 'creating' | 'ready' | 'failed';
export type ProjectState = 'provisioning' | 'ready' | 'suspended' | 'failed';

export interface WorkspaceRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: string;
  yam: { state: YamState; createdAt: string; readyAt: string | null; error: string | null } | null;
}

export interface ProjectRecord {
  id: string;
  workspaceId: string;
  accountId: string;
  name: string;
  provider: string;
  model: string;
  temperature: number | null;
  state: ProjectState;
  /** AES-256-GCM envelope of the provider key (see master-key.ts). */
  providerKey: { iv: string; tag: string; data: string; last4: string } | null;
  tokenId: string;
  tokenHash: string;
  createdAt: string;
  updatedAt: string;
}

export class HearthStore {
  readonly root: RootDatabase;
  readonly dbs: HearthDatabases;
  private closed = false;

  private constructor(root: RootDatabase) {
    this.root = root;
    this.dbs = {
      accounts: root.openDB<AccountRecord, string>({ name: 'accounts' }),
      apiKeys: root.openDB<ApiKeyRecord, string>({ name: 'api-keys' }),
      workspaces: root.openDB<WorkspaceRecord, string>({ name: 'workspaces' }),
      projects: root.openDB<ProjectRecord, string>({ name: 'projects' }),
      index: root.openDB<true, (string | number)[]>({ name: 'index' }),
    };
  }

  static open(dataDir: string): HearthStore {
    const dir = path.join(dataDir, 'records');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const root = open({ path: dir, maxDbs: 16, compression: false });
    return new HearthStore(root);
  }

  /** Runs `fn` in one write transaction: all of its puts/removes commit together or not at all. */
  transaction<T>(fn: () => T): Promise<T> {
    return this.root.transaction(fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.root.close();
  }
}
