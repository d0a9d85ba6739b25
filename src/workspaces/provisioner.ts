import type { Logger } from '../log/logger.ts';
import { isProviderName } from '../providers/chat-provider.ts';
import type { ProjectRepository } from './project-repository.ts';
import type { WorkspaceRepository } from './workspace-repository.ts';

/**
 * The asynchronous step that takes a Yam from `creating` to `ready` and a project from `provisioning` to
 * `ready` (or `failed`, with a reason). Each request is a task run `delayMs` after it was asked for (0 =
 * the next macrotask), so an API answer always shows the intermediate state first. A project is made
 * ready only when its configuration is usable: its workspace's Yam is ready, the provider is known, the
 * model is set and the stored provider key decrypts under the current master key.
 *
 * State lives in LMDB, not here: a task lost to a crash is picked up by `resumePending()` at the next
 * boot. The CLI, which has no background loop, calls `settle()` to run its tasks at once. Main thread;
 * `dispose()` (idempotent) drops the timers of tasks not yet started.
 */
export interface ProvisionerOptions {
  /** Delay before a task runs, in ms. Defaults to 0 (next macrotask). */
  delayMs: number;
}

export const DEFAULT_PROVISIONER_OPTIONS = { delayMs: 0 } satisfies Required<ProvisionerOptions>;

/** What makes a Yam able to host apps (apps/app-host.ts): the reason it cannot, or null. */
export interface YamHost {
  prepareYam(workspaceId: string): Promise<string | null>;
}

interface Task {
  timer: NodeJS.Timeout;
  run: () => Promise<void>;
}

export class Provisioner {
  private readonly options: ProvisionerOptions;
  private readonly scheduled = new Map<string, Task>();
  private readonly running = new Set<Promise<void>>();
  private disposed = false;

  constructor(
    private readonly workspaces: WorkspaceRepository,
    private readonly projects: ProjectRepository,
    private readonly log: Logger,
    options: Partial<ProvisionerOptions> = {},
    private readonly yamHost: YamHost | null = null,
  ) {
    this.options = { ...DEFAULT_PROVISIONER_OPTIONS, ...options };
    if (!Number.isFinite(this.options.delayMs) || this.options.delayMs < 0)
      throw new TypeError('provisioner: delayMs must be >= 0');
  }

  /** A Yam entered `creating`. */
  yamRequested(workspaceId: string): void {
    this.schedule(`yam:${workspaceId}`, () => this.provisionYam(workspaceId));
  }

  /** A project entered `provisioning`. */
  projectRequested(projectId: string): void {
    this.schedule(`project:${projectId}`, () => this.provisionProject(projectId));
  }

  /** Boot: schedules every Yam still `creating` and every project still `provisioning`. */
  resumePending(): { yams: number; projects: number } {
    const yams = this.workspaces.pendingYams();
    const projects = this.projects.pendingProvisioning();
    for (const id of yams) this.yamRequested(id);
    for (const id of projects) this.projectRequested(id);
    return { yams: yams.length, projects: projects.length };
  }

  /** Runs every scheduled task now and resolves when all tasks (also those already running) are done. */
  async settle(): Promise<void> {
    for (const [key, task] of [...this.scheduled]) {
      clearTimeout(task.timer);
      this.start(key, task);
    }
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  dispose(): void {
    this.disposed = true;
    for (const task of this.scheduled.values()) clearTimeout(task.timer);
    this.scheduled.clear();
  }

  private schedule(key: string, run: () => Promise<void>): void {
    if (this.disposed || this.scheduled.has(key)) return;
    const task: Task = { run, timer: setTimeout(() => this.start(key, task), this.options.delayMs) };
    task.timer.unref();
    this.scheduled.set(key, task);
  }

  private start(key: string, task: Task): void {
    if (this.scheduled.get(key) !== task) return;
    this.scheduled.delete(key);
    const p = task.run().catch((err: unknown) => {
      // The record keeps its intermediate state; the next boot resumes it.
      this.log.warn('provisioning failed', { task: key, error: err instanceof Error ? err.message : String(err) });
    });
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  private async provisionYam(workspaceId: string): Promise<void> {
    const problem = await this.yamProblem(workspaceId);
    const ws = await this.workspaces.finishYam(
      workspaceId,
      problem === null ? { ok: true } : { ok: false, error: problem },
    );
    if (ws?.yam?.state === 'ready') this.log.info('yam ready', { workspaceId });
    if (ws?.yam?.state === 'failed') this.log.warn('yam failed', { workspaceId, reason: ws.yam.error });
  }

  /** Why the Yam cannot host apps, or null; a preparation that throws is a problem too (never a Yam left `creating`). */
  private async yamProblem(workspaceId: string): Promise<string | null> {
    if (!this.yamHost) return null;
    try {
      return await this.yamHost.prepareYam(workspaceId);
    } catch (err) {
      return `the Yam could not be prepared: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  private async provisionProject(projectId: string): Promise<void> {
    const p = this.projects.getById(projectId);
    if (p?.state !== 'provisioning') return;
    const problem = this.configurationProblem(projectId);
    const next =
      problem === null
        ? await this.projects.transition(projectId, ['provisioning'], 'ready')
        : await this.projects.transition(projectId, ['provisioning'], 'failed', problem);
    if (next)
      this.log.info(`project ${next.state}`, {
        projectId,
        provider: next.provider,
        ...(problem ? { reason: problem } : {}),
      });
  }

  /** Why the project cannot serve, or null when it can. */
  private configurationProblem(projectId: string): string | null {
    const p = this.projects.getById(projectId);
    if (!p) return 'the project no longer exists';
    const ws = this.workspaces.getById(p.workspaceId);
    if (ws?.yam?.state !== 'ready') return "the workspace's Yam is not ready";
    if (!isProviderName(p.provider)) return `unknown provider '${p.provider}'`;
    if (p.model === '') return 'no model is stored';
    if (this.projects.providerKeyOf(p) === null)
      return 'the stored provider API key cannot be read (was the master key changed?); set it again with providerApiKey';
    return null;
  }
}
