import {
  indexedRecords,
  indexKeys,
  indexRange,
  oldestFirst,
  type WorkspaceRecord,
  type YamRecord,
} from '../store/database.ts';
import type { RecordStore } from '../store/record-store.ts';
import { sortableId } from '../store/secrets.ts';

/**
 * Workspaces of accounts, with their embedded Yam. Every read that takes an `accountId` treats another
 * account's workspace exactly like a missing one (undefined), so callers cannot tell them apart.
 * Multi-record changes (delete) run in one transaction. Main thread; shares the process's HearthStore.
 */
export class WorkspaceRepository {
  constructor(private readonly store: RecordStore) {}

  static newId(): string {
    return `ws_${sortableId()}`;
  }

  async create(accountId: string, name: string): Promise<WorkspaceRecord> {
    const { accounts, workspaces, index } = this.store.dbs;
    const now = new Date().toISOString();
    const record: WorkspaceRecord = { id: WorkspaceRepository.newId(), accountId, name, createdAt: now, yam: null };
    await this.store.transaction(() => {
      if (accounts.get(accountId) === undefined)
        accounts.put(accountId, { id: accountId, name: accountId, createdAt: now });
      workspaces.put(record.id, record);
      index.put(indexKeys.workspace(accountId, record.id), true);
    });
    return record;
  }

  /** The workspace when it exists and belongs to `accountId`; undefined otherwise (no hint which). */
  get(accountId: string, id: string): WorkspaceRecord | undefined {
    const r = this.store.dbs.workspaces.get(id);
    return r !== undefined && r.accountId === accountId ? r : undefined;
  }

  /** Any account's workspace (internal use: provisioning). */
  getById(id: string): WorkspaceRecord | undefined {
    return this.store.dbs.workspaces.get(id);
  }

  /** An account's workspaces, oldest first. */
  list(accountId: string): WorkspaceRecord[] {
    const { workspaces, index } = this.store.dbs;
    return indexedRecords(index, workspaces, 'workspace', accountId).sort(oldestFirst);
  }

  /**
   * Deletes the workspace and everything in it (its projects and their token index entries) in one
   * transaction. Null when there is no such workspace for the account; else how many projects went with it.
   */
  async delete(accountId: string, id: string): Promise<{ projects: number } | null> {
    const { workspaces, projects, index } = this.store.dbs;
    return this.store.transaction(() => {
      const ws = workspaces.get(id);
      if (ws === undefined || ws.accountId !== accountId) return null;
      let count = 0;
      for (const { key } of [...index.getRange(indexRange('project', id))]) {
        const projectId = String(key[2]);
        const project = projects.get(projectId);
        if (project) {
          index.remove(indexKeys.projectToken(project.tokenId, projectId));
          projects.remove(projectId);
          count++;
        }
        index.remove(key);
      }
      workspaces.remove(id);
      index.remove(indexKeys.workspace(accountId, id));
      return { projects: count };
    });
  }

  /**
   * PUT of the Yam: creates it in state `creating` when there is none or the last one failed (created =
   * true); otherwise leaves it as it is (idempotent). Null when there is no such workspace for the account.
   */
  async requestYam(accountId: string, id: string): Promise<{ workspace: WorkspaceRecord; created: boolean } | null> {
    const { workspaces } = this.store.dbs;
    return this.store.transaction(() => {
      const ws = workspaces.get(id);
      if (ws === undefined || ws.accountId !== accountId) return null;
      if (ws.yam !== null && ws.yam.state !== 'failed') return { workspace: ws, created: false };
      const yam: YamRecord = { state: 'creating', createdAt: new Date().toISOString(), readyAt: null, error: null };
      const next = { ...ws, yam };
      workspaces.put(id, next);
      return { workspace: next, created: true };
    });
  }

  /** Finishes a Yam's creation (`creating` -> `ready` or `failed`); a no-op in any other state. */
  async finishYam(
    id: string,
    outcome: { ok: true } | { ok: false; error: string },
  ): Promise<WorkspaceRecord | undefined> {
    const { workspaces } = this.store.dbs;
    return this.store.transaction(() => {
      const ws = workspaces.get(id);
      if (ws?.yam?.state !== 'creating') return ws;
      const yam: YamRecord = outcome.ok
        ? { ...ws.yam, state: 'ready', readyAt: new Date().toISOString(), error: null }
        : { ...ws.yam, state: 'failed', error: outcome.error };
      const next = { ...ws, yam };
      workspaces.put(id, next);
      return next;
    });
  }

  /** Ids of workspaces whose Yam is still `creating` (boot: resume provisioning). Scans; boot only. */
  pendingYams(): string[] {
    const out: string[] = [];
    for (const { value } of this.store.dbs.workspaces.getRange())
      if (value.yam?.state === 'creating') out.push(value.id);
    return out;
  }
}
