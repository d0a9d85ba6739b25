import { notFound, workspaceNotFound } from '../errors/index.ts';
import type { ProjectRecord, WorkspaceRecord } from '../store/database.ts';
import type { ProjectRepository } from './project-repository.ts';
import type { WorkspaceRepository } from './workspace-repository.ts';
import { parseNameInput, parseProjectInput, parseProjectPatch } from './workspace-input.ts';
import {
  type ProjectView,
  type ProjectViewWithToken,
  projectView,
  type WorkspaceView,
  workspaceView,
  type YamView,
  yamView,
} from './workspace-views.ts';
import { listView, type ListView } from '../http/list-view.ts';
import type { Provisioner } from './provisioner.ts';

/**
 * The workspace, Yam and inference-project API's behaviour, shared by the HTTP routes and the CLI: every operation is scoped to the
 * calling account, takes raw JSON bodies (validated here) and returns views. Someone else's workspace is
 * answered exactly like a missing one (404 workspace_not_found). Knows nothing of HTTP.
 */
export interface WorkspaceServiceDeps {
  workspaces: WorkspaceRepository;
  projects: ProjectRepository;
  provisioner: Provisioner;
  /** The base URL clients use (`--public-url`, else http://host:port); read when a view is built. */
  baseUrl: () => string;
  /** The app host (apps/app-host.ts), when this process runs apps: a deleted workspace's apps go with it. */
  apps?: { removeWorkspaceApps(workspaceId: string): Promise<number> };
}

const projectNotFound = () => notFound('Inference project not found', 'project_not_found');
const yamNotFound = () =>
  notFound(
    'No Yam configured for this workspace; create it with PUT /api/v1/workspaces/{workspaceId}/yam',
    'yam_not_found',
  );

export class WorkspaceService {
  constructor(private readonly d: WorkspaceServiceDeps) {}

  // Workspaces ------------------------------------------------------------------------------------------

  async createWorkspace(accountId: string, body: unknown): Promise<WorkspaceView> {
    const input = parseNameInput(body);
    return workspaceView(await this.d.workspaces.create(accountId, input.name));
  }

  listWorkspaces(accountId: string): ListView<WorkspaceView> {
    return listView(this.d.workspaces.list(accountId).map(workspaceView));
  }

  getWorkspace(accountId: string, workspaceId: string): WorkspaceView {
    return workspaceView(this.workspace(accountId, workspaceId));
  }

  /** Deletes the workspace with all its projects (one transaction; their tokens stop working at once) and its apps. */
  async deleteWorkspace(
    accountId: string,
    workspaceId: string,
  ): Promise<{ workspaceId: string; deleted: true; projectsDeleted: number }> {
    this.workspace(accountId, workspaceId);
    await this.d.apps?.removeWorkspaceApps(workspaceId);
    const result = await this.d.workspaces.delete(accountId, workspaceId);
    if (result === null) throw workspaceNotFound();
    return { workspaceId, deleted: true, projectsDeleted: result.projects };
  }

  /** PUT of the Yam: starts its creation (created = true) or returns it as it is; a failed Yam is retried. */
  async putYam(accountId: string, workspaceId: string): Promise<{ created: boolean; yam: YamView }> {
    const result = await this.d.workspaces.requestYam(accountId, workspaceId);
    if (result === null) throw workspaceNotFound();
    if (result.created) this.d.provisioner.yamRequested(workspaceId);
    return { created: result.created, yam: yamView(result.workspace)! };
  }

  getYam(accountId: string, workspaceId: string): YamView {
    const yam = yamView(this.workspace(accountId, workspaceId));
    if (yam === null) throw yamNotFound();
    return yam;
  }

  // Inference projects ----------------------------------------------------------------------------------

  /** Creates a project (state `provisioning`, ready shortly after); the token is in this answer only. */
  async createProject(accountId: string, workspaceId: string, body: unknown): Promise<ProjectViewWithToken> {
    this.workspace(accountId, workspaceId);
    const input = parseProjectInput(body);
    const { project, token } = await this.d.projects.create({ accountId, workspaceId, ...input });
    this.d.provisioner.projectRequested(project.id);
    return { ...this.view(project), token };
  }

  listProjects(accountId: string, workspaceId: string): ListView<ProjectView> {
    this.workspace(accountId, workspaceId);
    return listView(this.d.projects.list(accountId, workspaceId).map((p) => this.view(p)));
  }

  getProject(accountId: string, workspaceId: string, projectId: string): ProjectView {
    return this.view(this.project(accountId, workspaceId, projectId));
  }

  /**
   * PATCH: name, model, temperature, providerApiKey; `state: 'suspended'` suspends, `state: 'ready'`
   * resumes a suspended or failed project through provisioning. A failed project whose model or key
   * changes is provisioned again too.
   */
  async updateProject(accountId: string, workspaceId: string, projectId: string, body: unknown): Promise<ProjectView> {
    this.project(accountId, workspaceId, projectId);
    const patch = parseProjectPatch(body);
    let reprovision = false;
    const updated = await this.d.projects.update(accountId, workspaceId, projectId, {
      name: patch.name,
      model: patch.model,
      temperature: patch.temperature,
      providerApiKey: patch.providerApiKey,
      state: (current) => {
        if (patch.state === 'suspended')
          return current.state === 'suspended' ? undefined : { state: 'suspended', reason: 'suspended by its owner' };
        const resume = patch.state === 'ready' && (current.state === 'suspended' || current.state === 'failed');
        const repair =
          current.state === 'failed' &&
          (patch.model !== undefined || patch.providerApiKey !== undefined) &&
          patch.state === undefined;
        if (!resume && !repair) return undefined;
        reprovision = true;
        return { state: 'provisioning', reason: null };
      },
    });
    if (!updated) throw projectNotFound();
    if (reprovision) this.d.provisioner.projectRequested(projectId);
    return this.view(updated);
  }

  async deleteProject(
    accountId: string,
    workspaceId: string,
    projectId: string,
  ): Promise<{ projectId: string; deleted: true }> {
    this.workspace(accountId, workspaceId);
    if (!(await this.d.projects.delete(accountId, workspaceId, projectId))) throw projectNotFound();
    return { projectId, deleted: true };
  }

  /** A new bearer token, shown in this answer only; the old one stops working at once. */
  async rotateToken(accountId: string, workspaceId: string, projectId: string): Promise<ProjectViewWithToken> {
    this.workspace(accountId, workspaceId);
    const rotated = await this.d.projects.rotateToken(accountId, workspaceId, projectId);
    if (!rotated) throw projectNotFound();
    return { ...this.view(rotated.project), token: rotated.token };
  }

  // -----------------------------------------------------------------------------------------------------

  private workspace(accountId: string, workspaceId: string): WorkspaceRecord {
    const ws = this.d.workspaces.get(accountId, workspaceId);
    if (!ws) throw workspaceNotFound();
    return ws;
  }

  private project(accountId: string, workspaceId: string, projectId: string): ProjectRecord {
    this.workspace(accountId, workspaceId);
    const p = this.d.projects.get(accountId, workspaceId, projectId);
    if (!p) throw projectNotFound();
    return p;
  }

  private view(p: ProjectRecord): ProjectView {
    return projectView(p, this.d.baseUrl().replace(/\/+$/, ''));
  }
}
