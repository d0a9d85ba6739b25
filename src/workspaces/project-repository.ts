import { orRefreshed } from '../accounts/fresh-credentials.ts';
import { noYamConfigured, unauthorized, workspaceNotFound } from '../errors/index.ts';
import type { RecordStore } from '../store/record-store.ts';
import { indexKeys, indexRange, oldestFirst, type ProjectRecord, type ProjectState } from '../store/database.ts';
import type { ProviderKeyCipher } from './provider-key-cipher.ts';
import { WorkspaceScopedReads } from '../store/workspace-scoped-reads.ts';
import {
  issueCredential,
  parseCredential,
  randomId,
  secretMatches,
  sortableId,
  UNKNOWN_ID_SECRET_HASH,
} from '../store/secrets.ts';

/**
 * Inference projects. A project lives in a workspace of one account; reads that take (accountId,
 * workspaceId) treat anything else as missing. Its bearer token (`hp_<tokenId>_<secret>`) is stored as the
 * SHA-256 of the secret and found through the index entry `projectToken(tokenId)`, never by a scan; its
 * provider key is stored encrypted (ProviderKeyCipher, bound to the project id). Every multi-record change
 * is one transaction that checks first and writes after (see HearthStore.transaction).
 */
export interface NewProject {
  accountId: string;
  workspaceId: string;
  name: string;
  provider: string;
  model: string;
  temperature: number | null;
  providerApiKey: string;
}

export interface ProjectChanges {
  name?: string | undefined;
  model?: string | undefined;
  temperature?: number | null | undefined;
  providerApiKey?: string | undefined;
  /**
   * The new state given the current record (read in the write transaction, so the decision is atomic
   * with the change); undefined keeps the state as it is.
   */
  state?: ((current: ProjectRecord) => { state: ProjectState; reason: string | null } | undefined) | undefined;
}

/** A project with the plaintext token: only at creation and rotation. */
export interface ProjectWithToken {
  project: ProjectRecord;
  token: string;
}

const keyContext = (projectId: string) => `project:${projectId}:provider-key`;

export class ProjectRepository extends WorkspaceScopedReads<ProjectRecord> {
  constructor(
    store: RecordStore,
    private readonly cipher: ProviderKeyCipher,
  ) {
    super(store, { table: (dbs) => dbs.projects, kind: 'project', order: oldestFirst });
  }

  static newId(): string {
    return `proj_${sortableId()}`;
  }

  /**
   * Creates a project in state `provisioning`. Throws workspace_not_found (no such workspace for the
   * account) or no_yam_configured (its Yam is missing or not ready), checked in the write transaction.
   */
  async create(input: NewProject): Promise<ProjectWithToken> {
    const { workspaces, projects, index } = this.store.dbs;
    const id = ProjectRepository.newId();
    const cred = issueCredential('hp', randomId());
    const now = new Date().toISOString();
    const project: ProjectRecord = {
      id,
      workspaceId: input.workspaceId,
      accountId: input.accountId,
      name: input.name,
      provider: input.provider,
      model: input.model,
      temperature: input.temperature,
      state: 'provisioning',
      stateReason: null,
      providerKey: this.cipher.encrypt(input.providerApiKey, keyContext(id)),
      tokenId: cred.id,
      tokenHash: cred.secretHash,
      tokenIssuedAt: now,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.transaction(() => {
      const ws = workspaces.get(input.workspaceId);
      if (ws === undefined || ws.accountId !== input.accountId) throw workspaceNotFound();
      if (ws.yam?.state !== 'ready') throw noYamConfigured();
      projects.put(id, project);
      index.put(indexKeys.project(input.workspaceId, id), true);
      index.put(indexKeys.projectToken(cred.id, id), true);
    });
    return { project, token: cred.plaintext };
  }

  /** Applies `changes` (a new provider key is encrypted here); undefined when there is no such project. */
  async update(
    accountId: string,
    workspaceId: string,
    projectId: string,
    changes: ProjectChanges,
  ): Promise<ProjectRecord | undefined> {
    const providerKey =
      changes.providerApiKey === undefined
        ? undefined
        : this.cipher.encrypt(changes.providerApiKey, keyContext(projectId));
    return this.modify(
      projectId,
      (p) => (p.accountId === accountId && p.workspaceId === workspaceId ? p : undefined),
      (p) => {
        const next: ProjectRecord = { ...p, updatedAt: new Date().toISOString() };
        if (changes.name !== undefined) next.name = changes.name;
        if (changes.model !== undefined) next.model = changes.model;
        if (changes.temperature !== undefined) next.temperature = changes.temperature;
        if (providerKey !== undefined) next.providerKey = providerKey;
        const state = changes.state?.(p);
        if (state !== undefined) {
          next.state = state.state;
          next.stateReason = state.reason;
        }
        return next;
      },
    );
  }

  /** Moves a project to `to` only if it is in one of `from` (provisioning, suspend/resume). */
  async transition(
    projectId: string,
    from: readonly ProjectState[],
    to: ProjectState,
    reason: string | null = null,
  ): Promise<ProjectRecord | undefined> {
    return this.modify(
      projectId,
      (p) => (from.includes(p.state) ? p : undefined),
      (p) => ({ ...p, state: to, stateReason: reason, updatedAt: new Date().toISOString() }),
    );
  }

  /** Deletes the project and its token index entry; false when there is no such project. */
  async delete(accountId: string, workspaceId: string, projectId: string): Promise<boolean> {
    const { projects, index } = this.store.dbs;
    return this.store.transaction(() => {
      const p = projects.get(projectId);
      if (p === undefined || p.accountId !== accountId || p.workspaceId !== workspaceId) return false;
      projects.remove(projectId);
      index.remove(indexKeys.project(workspaceId, projectId));
      index.remove(indexKeys.projectToken(p.tokenId, projectId));
      return true;
    });
  }

  /** Issues a new token; the old one stops working with this commit. Undefined when there is no such project. */
  async rotateToken(accountId: string, workspaceId: string, projectId: string): Promise<ProjectWithToken | undefined> {
    const { projects, index } = this.store.dbs;
    const cred = issueCredential('hp', randomId());
    const project = await this.store.transaction(() => {
      const p = projects.get(projectId);
      if (p === undefined || p.accountId !== accountId || p.workspaceId !== workspaceId) return undefined;
      const now = new Date().toISOString();
      const next: ProjectRecord = {
        ...p,
        tokenId: cred.id,
        tokenHash: cred.secretHash,
        tokenIssuedAt: now,
        updatedAt: now,
      };
      index.remove(indexKeys.projectToken(p.tokenId, projectId));
      index.put(indexKeys.projectToken(cred.id, projectId), true);
      projects.put(projectId, next);
      return next;
    });
    return project && { project, token: cred.plaintext };
  }

  /**
   * The project a presented bearer token belongs to. Throws `unauthorized()` for a missing, malformed,
   * unknown, rotated-away or tampered token (constant-time hash comparison). Says nothing of project state.
   */
  authenticate(presented: string | undefined): ProjectRecord {
    if (!presented) throw unauthorized();
    const parsed = parseCredential('hp', presented);
    if (!parsed) throw unauthorized();
    const { projects, index } = this.store.dbs;
    let projectId: string | undefined;
    for (const { key } of index.getRange({ ...indexRange('project-token', parsed.id), limit: 1 }))
      projectId = String(key[2]);
    const p = projectId === undefined ? undefined : projects.get(projectId);
    const known = p !== undefined && p.tokenId === parsed.id;
    // One hash and one constant-time compare whether or not the token id exists.
    const matches = secretMatches(parsed.secret, known ? p.tokenHash : UNKNOWN_ID_SECRET_HASH);
    if (!known || !matches) throw unauthorized();
    return p;
  }

  /** authenticate, and for a well-formed token unknown here once more after the records caught up (fresh-credentials.ts). */
  authenticateFresh(presented: string | undefined): ProjectRecord | Promise<ProjectRecord> {
    const couldExist = presented !== undefined && parseCredential('hp', presented) !== null;
    return orRefreshed(
      () => this.authenticate(presented),
      couldExist ? this.store.refresh?.bind(this.store) : undefined,
    );
  }

  /** The decrypted provider key, or null when it is missing or unreadable (e.g. the master key changed). */
  providerKeyOf(project: ProjectRecord): string | null {
    return this.cipher.decrypt(project.providerKey, keyContext(project.id));
  }

  /** Ids of projects still `provisioning` (boot: resume provisioning). Scans; boot only. */
  pendingProvisioning(): string[] {
    const out: string[] = [];
    for (const { value } of this.store.dbs.projects.getRange()) if (value.state === 'provisioning') out.push(value.id);
    return out;
  }

  private modify(
    projectId: string,
    select: (p: ProjectRecord) => ProjectRecord | undefined,
    change: (p: ProjectRecord) => ProjectRecord,
  ): Promise<ProjectRecord | undefined> {
    const { projects } = this.store.dbs;
    return this.store.transaction(() => {
      const current = projects.get(projectId);
      const selected = current && select(current);
      if (!selected) return undefined;
      const next = change(selected);
      projects.put(projectId, next);
      return next;
    });
  }
}
