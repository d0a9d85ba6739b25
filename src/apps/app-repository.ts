import {
  type AppRecord,
  type DeploymentRecord,
  type DeploymentSource,
  type DeploymentState,
  indexKeys,
  indexedRecords,
  indexRange,
} from '../store/database.ts';
import type { RecordStore, RecordTable } from '../store/record-store.ts';
import type { IndexKey } from '../store/records.ts';
import { WorkspaceScopedReads } from '../store/workspace-scoped-reads.ts';
import type { ProviderKeyCipher } from '../workspaces/provider-key-cipher.ts';
import { sortableId } from '../store/secrets.ts';
import type { AppInput, AppPatch } from './app-input.ts';

/**
 * Apps on Yams and their deployments (releases). Reads that take (accountId, workspaceId) treat anything
 * else as missing. Env values and the app's own API key are stored encrypted (ProviderKeyCipher, the
 * associated data binding each envelope to its app and variable), and leave this class only through
 * `envOf` / `apiKeyOf`, for the process launcher. Multi-record changes are one transaction. Main thread.
 */
/** A new app: the validated input (app-input.ts) and where it lives. */
export interface NewApp extends AppInput {
  accountId: string;
  workspaceId: string;
}

/** A validated patch, and the app's own key when the patch changes `apiKeyEnv`. */
export interface AppChanges extends AppPatch {
  /** The app's key: set when `apiKeyEnv` goes from null to a name, cleared when it goes to null. */
  apiKey?: { id: string; key: string } | null | undefined;
}

/** The last bytes of a build log kept in the record (the whole log is in the deployment's log file). */
export const BUILD_LOG_TAIL_BYTES = 16 * 1024;

const envContext = (appId: string, name: string) => `app:${appId}:env:${name}`;
const keyContext = (appId: string) => `app:${appId}:api-key`;

export class AppRepository extends WorkspaceScopedReads<AppRecord> {
  constructor(
    store: RecordStore,
    private readonly cipher: ProviderKeyCipher,
  ) {
    super(store, { table: (dbs) => dbs.apps, kind: 'app', order: (a, b) => a.id.localeCompare(b.id) });
  }

  static newAppId(): string {
    return `app_${sortableId()}`;
  }

  static newDeploymentId(): string {
    return `dep_${sortableId()}`;
  }

  /** Creates an app; `apiKey` is the key made for it (or null). The caller checked the workspace and its Yam. */
  async create(id: string, input: NewApp, apiKey: { id: string; key: string } | null): Promise<AppRecord> {
    const { apps } = this.store.dbs;
    const now = new Date().toISOString();
    const env: AppRecord['env'] = {};
    for (const [name, value] of Object.entries(input.env)) env[name] = this.cipher.encrypt(value, envContext(id, name));
    const record: AppRecord = {
      id,
      workspaceId: input.workspaceId,
      accountId: input.accountId,
      name: input.name,
      env,
      apiKeyEnv: input.apiKeyEnv,
      apiKeyId: apiKey?.id ?? null,
      apiKey: apiKey ? this.cipher.encrypt(apiKey.key, keyContext(id)) : null,
      healthPath: input.healthPath,
      liveDeploymentId: null,
      createdAt: now,
      updatedAt: now,
    };
    return this.insert(apps, record, indexKeys.app(input.workspaceId, id));
  }

  /** Every app of every workspace (boot: supervise them, start the live ones again). Scans; boot only. */
  all(): AppRecord[] {
    return [...this.store.dbs.apps.getRange()].map(({ value }) => value);
  }

  async update(appId: string, changes: AppChanges): Promise<AppRecord | undefined> {
    const { apps } = this.store.dbs;
    const sealed: Record<string, AppRecord['env'][string] | null> = {};
    for (const [name, value] of Object.entries(changes.env ?? {}))
      sealed[name] = value === null ? null : this.cipher.encrypt(value, envContext(appId, name));
    const apiKey =
      changes.apiKey === undefined
        ? undefined
        : changes.apiKey === null
          ? null
          : { id: changes.apiKey.id, sealed: this.cipher.encrypt(changes.apiKey.key, keyContext(appId)) };
    return this.store.transaction(() => {
      const a = apps.get(appId);
      if (!a) return undefined;
      const next: AppRecord = { ...a, env: { ...a.env }, updatedAt: new Date().toISOString() };
      if (changes.name !== undefined) next.name = changes.name;
      if (changes.healthPath !== undefined) next.healthPath = changes.healthPath;
      if (changes.apiKeyEnv !== undefined) next.apiKeyEnv = changes.apiKeyEnv;
      for (const [name, value] of Object.entries(sealed)) {
        if (value === null) delete next.env[name];
        else next.env[name] = value;
      }
      if (apiKey === null) {
        next.apiKeyId = null;
        next.apiKey = null;
      } else if (apiKey !== undefined) {
        next.apiKeyId = apiKey.id;
        next.apiKey = apiKey.sealed;
      }
      apps.put(appId, next);
      return next;
    });
  }

  async setLive(appId: string, deploymentId: string | null): Promise<void> {
    const { apps } = this.store.dbs;
    await this.store.transaction(() => {
      const a = apps.get(appId);
      if (a) apps.put(appId, { ...a, liveDeploymentId: deploymentId, updatedAt: new Date().toISOString() });
    });
  }

  /** Deletes the app and all its deployment records; the removed record, or undefined. */
  async delete(appId: string): Promise<AppRecord | undefined> {
    const { apps, deployments, index } = this.store.dbs;
    return this.store.transaction(() => {
      const a = apps.get(appId);
      if (!a) return undefined;
      for (const { key } of [...index.getRange(indexRange('deployment', appId))]) {
        deployments.remove(String(key[2]));
        index.remove(key);
      }
      apps.remove(appId);
      index.remove(indexKeys.app(a.workspaceId, appId));
      return a;
    });
  }

  /** The decrypted env; a value that no longer decrypts (master key changed) is left out and named in `unreadable`. */
  envOf(app: AppRecord): { env: Record<string, string>; unreadable: string[] } {
    const env: Record<string, string> = {};
    const unreadable: string[] = [];
    for (const [name, sealed] of Object.entries(app.env)) {
      const value = this.cipher.decrypt(sealed, envContext(app.id, name));
      if (value === null) unreadable.push(name);
      else env[name] = value;
    }
    return { env, unreadable };
  }

  apiKeyOf(app: AppRecord): string | null {
    return app.apiKey === null ? null : this.cipher.decrypt(app.apiKey, keyContext(app.id));
  }

  /** Writes a new record and its index entry in one transaction; resolves to the record once durable. */
  private async insert<R extends { id: string }>(table: RecordTable<R>, record: R, indexKey: IndexKey): Promise<R> {
    await this.store.transaction(() => {
      table.put(record.id, record);
      this.store.dbs.index.put(indexKey, true);
    });
    return record;
  }

  // Deployments ----------------------------------------------------------------------------------------

  async createDeployment(
    app: AppRecord,
    source: DeploymentSource,
    id = AppRepository.newDeploymentId(),
  ): Promise<DeploymentRecord> {
    const { deployments } = this.store.dbs;
    const now = new Date().toISOString();
    const codeFrom = source.kind === 'release' ? (deployments.get(source.from)?.codeFrom ?? source.from) : id;
    const record: DeploymentRecord = {
      id,
      appId: app.id,
      workspaceId: app.workspaceId,
      accountId: app.accountId,
      source,
      codeFrom,
      state: 'queued',
      reason: null,
      buildLog: '',
      createdAt: now,
      updatedAt: now,
      liveAt: null,
    };
    return this.insert(deployments, record, indexKeys.deployment(app.id, id));
  }

  getDeployment(appId: string, deploymentId: string): DeploymentRecord | undefined {
    const d = this.store.dbs.deployments.get(deploymentId);
    return d !== undefined && d.appId === appId ? d : undefined;
  }

  /** An app's deployments, newest first. */
  listDeployments(appId: string): DeploymentRecord[] {
    const { deployments, index } = this.store.dbs;
    return indexedRecords(index, deployments, 'deployment', appId).sort((a, b) => b.id.localeCompare(a.id));
  }

  /** Moves a deployment to `state` (with a reason and the build log tail when given); undefined when it is gone. */
  async setDeploymentState(
    deploymentId: string,
    state: DeploymentState,
    extra: { reason?: string | null; buildLog?: string; source?: DeploymentSource } = {},
  ): Promise<DeploymentRecord | undefined> {
    const { deployments } = this.store.dbs;
    return this.store.transaction(() => {
      const d = deployments.get(deploymentId);
      if (!d) return undefined;
      const now = new Date().toISOString();
      const next: DeploymentRecord = { ...d, state, updatedAt: now };
      if (extra.reason !== undefined) next.reason = extra.reason;
      if (extra.source !== undefined) next.source = extra.source;
      if (extra.buildLog !== undefined)
        next.buildLog =
          extra.buildLog.length > BUILD_LOG_TAIL_BYTES ? extra.buildLog.slice(-BUILD_LOG_TAIL_BYTES) : extra.buildLog;
      if (state === 'live') next.liveAt = now;
      deployments.put(deploymentId, next);
      return next;
    });
  }

  /** Boot: deployments a previous run left half-way (queued .. starting) fail, saying so. Scans; boot only. */
  async failInterrupted(): Promise<number> {
    const stale: string[] = [];
    for (const { value } of this.store.dbs.deployments.getRange())
      if (['queued', 'fetching', 'building', 'starting'].includes(value.state)) stale.push(value.id);
    for (const id of stale)
      await this.setDeploymentState(id, 'failed', {
        reason: 'build_failed: interrupted: Hearth stopped during the deployment',
      });
    return stale.length;
  }
}
