import fs from 'node:fs';
import {
  appNotFound,
  deploymentNotFound,
  invalidArchive,
  invalidRequest,
  noYamConfigured,
  repositoryNotAllowed,
  repositoryUnreachable,
  shuttingDown,
  workspaceNotFound,
} from '../errors/index.ts';
import { AppRepository } from './app-repository.ts';
import type { AppRecord, DeploymentRecord, DeploymentSource } from '../store/database.ts';
import { type AppHostDeps, type AppHostOptions, DEFAULT_APP_HOST_OPTIONS } from './app-host-options.ts';
import { AppFileLayout } from './app-file-layout.ts';
import { parseAppInput, parseAppPatch, parseRepositoryInput, parseRollbackInput } from './app-input.ts';
import { AppRuntimes } from './app-runtimes.ts';
import { type DeploymentHost, runDeployment } from './deployment-run.ts';
import { sandboxProblem } from './sandbox-trial.ts';
import { appView, type AppView, deploymentView, type DeploymentView } from './app-views.ts';
import { ArchiveError, unpackArchive } from './archive-unpacker.ts';
import { isAcceptableRepositoryUrl, probeRepository } from './deployment-builder.ts';
import type { LogLine } from './log-ring.ts';
import { decideRepository } from './repository-policy.ts';
import { apiUnreachableReason, removeStaleNamespaces } from './app-network.ts';
import { isolatesNetwork } from './sandbox.ts';

export type { AppHostDeps, AppHostOptions } from './app-host-options.ts';
export { DEFAULT_APP_HOST_OPTIONS } from './app-host-options.ts';

export { APP_STATES } from './app-runtimes.ts';

/**
 * The application host of every Yam (contract.md "Applications on the Yam"): app records, deployments
 * (fetch, unpack, build, health-gated go-live), releases, rollback, restarts, logs, and the proxy's
 * target. Files live under `rootDir/<workspaceId>/<appId>/releases/<deploymentId>` (one build directory
 * per deployment that fetched code; env changes and rollbacks reuse an earlier one), build logs beside
 * them. Every operation is scoped to the calling account like the management API; a workspace without a
 * ready Yam answers no_yam_configured. Main thread; `start()` once after the HTTP server listens,
 * `dispose()` (idempotent) stops every app process.
 */
export class AppHost {
  private readonly options: AppHostOptions;
  private readonly runtimes: AppRuntimes;
  private readonly pending = new Set<Promise<void>>();
  /**
   * Per app: `stop`, aborted when the app goes (deleted, its workspace deleted, Hearth stopping), and the work
   * writing into its directory now (an archive unpacking, a deployment's run). Removal stops that work and waits
   * for it before it removes the files, so nothing is written into a directory being removed.
   */
  private readonly lives = new Map<string, { stop: AbortController; work: Set<Promise<unknown>> }>();
  private disposed = false;
  private readonly layout: AppFileLayout;
  /** What a deployment's run (deployment-run.ts) works with: this host's parts. */
  private readonly deployments: DeploymentHost;

  constructor(
    private readonly d: AppHostDeps,
    options: Pick<AppHostOptions, 'rootDir' | 'sandbox'> & Partial<AppHostOptions>,
  ) {
    this.options = { ...DEFAULT_APP_HOST_OPTIONS, ...options };
    this.layout = new AppFileLayout(this.options.rootDir);
    this.runtimes = new AppRuntimes(d, this.options, this.layout);
    this.deployments = {
      d,
      options: this.options,
      layout: this.layout,
      runtimes: this.runtimes,
      stopSignal: (appId) => this.life(appId).stop.signal,
      disposed: () => this.disposed,
    };
  }

  get archiveLimit(): number {
    return this.options.archiveLimit;
  }

  // The Yam ---------------------------------------------------------------------------------------------

  /** PUT .../yam: makes the workspace's directory and checks the sandbox; the reason it cannot host apps, or null. */
  async prepareYam(workspaceId: string): Promise<string | null> {
    try {
      await fs.promises.mkdir(this.layout.workspaceDir(workspaceId), { recursive: true, mode: 0o711 });
    } catch (err) {
      return `cannot create the Yam's directory: ${(err as Error).message}`;
    }
    return await sandboxProblem(this.options.sandbox, this.options.rootDir);
  }

  // Lifecycle -------------------------------------------------------------------------------------------

  /** Boot: fails deployments a previous run left half-way, and starts every app that has a live deployment. */
  async start(): Promise<void> {
    fs.mkdirSync(this.options.rootDir, { recursive: true, mode: 0o711 });
    if (this.options.sandbox.mode === 'none')
      this.d.log.warn('apps run WITHOUT a sandbox (--app-sandbox none): they can read everything Hearth can');
    else if (this.options.sandbox.network.mode === 'host')
      this.d.log.warn(
        "apps share the host's network (--app-network host): they can reach every service on this machine's loopback and addresses, Hearth's internal port and other apps included",
      );
    if (isolatesNetwork(this.options.sandbox)) {
      const unreachable = apiUnreachableReason('isolated', this.options.listenHost);
      if (unreachable !== null) this.d.log.warn(unreachable);
      const stale = await removeStaleNamespaces();
      if (stale > 0) this.d.log.info("removed apps' network namespaces a previous run left", { count: stale });
    }
    if (this.options.repositories === 'local')
      this.d.log.warn(
        'deployments may clone local paths and file:// repositories of this machine (--app-repositories local): every workspace member can read them',
      );
    const interrupted = await this.d.apps.failInterrupted();
    if (interrupted > 0)
      this.d.log.warn('deployments interrupted by the last stop marked failed', { count: interrupted });
    for (const app of this.d.apps.all()) {
      if (this.d.workspaces.getById(app.workspaceId) === undefined) {
        await this.remove(app); // its workspace was deleted while Hearth was not running apps (e.g. by the CLI)
        continue;
      }
      const rt = this.runtimes.get(app.id);
      if (app.liveDeploymentId === null) continue;
      rt.setState('starting');
      this.track(rt.restartNow());
    }
    this.runtimes.updateGauge();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const life of this.lives.values()) life.stop.abort();
    await Promise.all(this.runtimes.all().map((r) => r.dispose()));
  }

  // Apps ------------------------------------------------------------------------------------------------

  async createApp(accountId: string, workspaceId: string, body: unknown): Promise<AppView> {
    this.readyWorkspace(accountId, workspaceId);
    const input = parseAppInput(body);
    const id = AppRepository.newAppId();
    const key = input.apiKeyEnv === null ? null : await this.d.keys.create(`app:${id}`, accountId);
    const app = await this.d.apps.create(id, { accountId, workspaceId, ...input }, key && { id: key.id, key: key.key });
    this.runtimes.get(id);
    this.runtimes.updateGauge();
    return this.view(app);
  }

  listApps(accountId: string, workspaceId: string): AppView[] {
    this.readyWorkspace(accountId, workspaceId);
    return this.d.apps.list(accountId, workspaceId).map((a) => this.view(a));
  }

  getApp(accountId: string, workspaceId: string, appId: string): AppView {
    return this.view(this.app(accountId, workspaceId, appId));
  }

  /** PATCH: name, healthPath, env (null unsets), apiKeyEnv (a key is made or revoked); env or key changes start a new release. */
  async updateApp(accountId: string, workspaceId: string, appId: string, body: unknown): Promise<AppView> {
    const current = this.app(accountId, workspaceId, appId);
    const { env, unreadable } = this.d.apps.envOf(current);
    for (const name of unreadable) env[name] = '';
    const patch = parseAppPatch(body, { env, apiKeyEnv: current.apiKeyEnv });
    let apiKey: { id: string; key: string } | null | undefined;
    if (patch.apiKeyEnv !== undefined && (patch.apiKeyEnv === null) !== (current.apiKeyEnv === null)) {
      if (patch.apiKeyEnv === null) {
        if (current.apiKeyId) await this.d.keys.revoke(current.apiKeyId);
        apiKey = null;
      } else {
        const k = await this.d.keys.create(`app:${appId}`, accountId);
        apiKey = { id: k.id, key: k.key };
      }
    }
    const updated = await this.d.apps.update(appId, { ...patch, apiKey });
    if (!updated) throw appNotFound();
    const envChanged = patch.env !== undefined && Object.keys(patch.env).length > 0;
    const keyChanged = patch.apiKeyEnv !== undefined && patch.apiKeyEnv !== current.apiKeyEnv;
    const healthChanged = patch.healthPath !== undefined && patch.healthPath !== current.healthPath;
    if ((envChanged || keyChanged || healthChanged) && updated.liveDeploymentId !== null) {
      await this.release(updated, {
        kind: 'release',
        from: updated.liveDeploymentId,
        why: envChanged ? 'env' : 'config',
      });
    }
    return this.view(updated);
  }

  /** Stops the app, removes its files and records, and revokes its key. */
  async deleteApp(accountId: string, workspaceId: string, appId: string): Promise<{ appId: string; deleted: true }> {
    await this.remove(this.app(accountId, workspaceId, appId));
    return { appId, deleted: true };
  }

  /** The workspace is being deleted: every app of it goes (stopped, files removed, keys revoked). */
  async removeWorkspaceApps(workspaceId: string): Promise<number> {
    const apps = this.d.apps.all().filter((a) => a.workspaceId === workspaceId);
    for (const app of apps) await this.remove(app);
    await fs.promises.rm(this.layout.workspaceDir(workspaceId), { recursive: true, force: true });
    return apps.length;
  }

  private async remove(app: AppRecord): Promise<void> {
    const life = this.life(app.id);
    life.stop.abort();
    const rt = this.runtimes.remove(app.id);
    await rt?.dispose(); // a process still starting included: a deployment's run waiting on it ends
    while (life.work.size > 0) await Promise.allSettled([...life.work]);
    if (app.apiKeyId) await this.d.keys.revoke(app.apiKeyId);
    await this.d.apps.delete(app.id);
    await fs.promises.rm(this.layout.appDir(app), { recursive: true, force: true, maxRetries: 3 });
    this.lives.delete(app.id); // only now: work that came in meanwhile found the app stopped
    this.runtimes.updateGauge();
    this.d.log.info('app deleted', { appId: app.id });
  }

  // Deployments -----------------------------------------------------------------------------------------

  /** A .tar.gz upload: unpacked (safely) before the answer, so a bad archive is a 400; the build runs after. */
  async deployArchive(accountId: string, workspaceId: string, appId: string, archive: Buffer): Promise<DeploymentView> {
    const app = this.app(accountId, workspaceId, appId);
    return this.during(app.id, async (stop) => {
      const deploymentId = AppRepository.newDeploymentId();
      const codeDir = this.layout.codeDir(app, deploymentId);
      try {
        await fs.promises.mkdir(codeDir, { recursive: true, mode: 0o755 });
        const limits = { maxFiles: this.options.maxFiles, maxBytes: this.options.maxUnpackedBytes };
        await unpackArchive(archive, codeDir, limits, stop);
        stop.throwIfAborted();
      } catch (err) {
        await fs.promises.rm(codeDir, { recursive: true, force: true, maxRetries: 3 });
        if (stop.aborted) throw this.disposed ? shuttingDown() : appNotFound(); // the app went meanwhile
        if (err instanceof ArchiveError) throw invalidArchive(err.message);
        throw err;
      }
      const dep = await this.d.apps.createDeployment(app, { kind: 'archive', bytes: archive.length }, deploymentId);
      this.enqueue(app, dep, [`unpacked the archive (${archive.length} bytes)`]);
      return deploymentView(dep);
    });
  }

  /** JSON {repository, ref?}: the repository must be allowed (else 400 repository_not_allowed) and answer `git ls-remote` (else 400 repository_unreachable). */
  async deployRepository(
    accountId: string,
    workspaceId: string,
    appId: string,
    body: unknown,
  ): Promise<DeploymentView> {
    const app = this.app(accountId, workspaceId, appId);
    const input = parseRepositoryInput(body);
    if (!isAcceptableRepositoryUrl(input.repository))
      throw invalidRequest("'repository' is not a URL git may clone", 'repository', 'invalid_value');
    const permit = await decideRepository(input.repository, this.options.repositories);
    if (permit.kind === 'refused') throw repositoryNotAllowed(permit.reason);
    if (permit.kind === 'unreachable') throw repositoryUnreachable(permit.reason);
    const problem = await probeRepository(permit, Math.min(60_000, this.options.buildTimeoutMs));
    if (problem !== null) throw repositoryUnreachable(problem);
    const dep = await this.d.apps.createDeployment(app, {
      kind: 'repository',
      repository: input.repository,
      ref: input.ref,
      commit: null,
    });
    this.enqueue(app, dep, []);
    return deploymentView(dep);
  }

  listDeployments(accountId: string, workspaceId: string, appId: string): DeploymentView[] {
    this.app(accountId, workspaceId, appId);
    return this.d.apps.listDeployments(appId).map(deploymentView);
  }

  getDeployment(accountId: string, workspaceId: string, appId: string, deploymentId: string): DeploymentView {
    this.app(accountId, workspaceId, appId);
    const dep = this.d.apps.getDeployment(appId, deploymentId);
    if (!dep) throw deploymentNotFound();
    return deploymentView(dep);
  }

  /** Makes an earlier successful build live again, as a new release of its code. */
  async rollback(accountId: string, workspaceId: string, appId: string, body: unknown): Promise<DeploymentView> {
    const app = this.app(accountId, workspaceId, appId);
    const target = this.d.apps.getDeployment(appId, parseRollbackInput(body));
    if (!target) throw deploymentNotFound();
    if (target.state !== 'live' && target.state !== 'retired') {
      throw invalidRequest(
        `Deployment ${target.id} never went live (state ${target.state}); only an earlier successful build can be rolled back to`,
        'deploymentId',
        'invalid_value',
      );
    }
    if (!fs.existsSync(this.layout.codeDir(app, target.codeFrom)))
      throw invalidRequest(
        `The build of deployment ${target.id} is no longer on disk`,
        'deploymentId',
        'invalid_value',
      );
    return deploymentView(await this.release(app, { kind: 'release', from: target.id, why: 'rollback' }));
  }

  async restart(accountId: string, workspaceId: string, appId: string): Promise<AppView> {
    const app = this.app(accountId, workspaceId, appId);
    if (app.liveDeploymentId === null)
      throw invalidRequest('The app has no live deployment to restart', null, 'app_not_deployed');
    const rt = this.runtimes.get(appId);
    await rt.serialize(() => rt.restartNow());
    return this.view(this.d.apps.getById(appId) ?? app);
  }

  logs(accountId: string, workspaceId: string, appId: string, lines: number): LogLine[] {
    this.app(accountId, workspaceId, appId);
    return this.runtimes.get(appId).logs.tail(lines);
  }

  /** Subscribes to new log lines; `onEnd` runs when the app is deleted or Hearth stops. Returns the unsubscribe function. */
  followLogs(
    accountId: string,
    workspaceId: string,
    appId: string,
    onLine: (l: LogLine) => void,
    onEnd: () => void,
  ): () => void {
    this.app(accountId, workspaceId, appId);
    return this.runtimes.get(appId).logs.subscribe(onLine, onEnd);
  }

  // The proxy's view ------------------------------------------------------------------------------------

  /** Where `/apps/{appId}/...` goes: the live port, or why not (404 / 503 with a Retry-After). */
  proxyTarget(appId: string): { port: number } | { missing: true } | { retryAfter: number } {
    const app = this.d.apps.getById(appId);
    if (!app) return { missing: true };
    const rt = this.runtimes.find(appId);
    const port = rt?.livePort ?? null;
    if (port === null) return { retryAfter: rt?.retryAfterSeconds() ?? 5 };
    return { port };
  }

  // -----------------------------------------------------------------------------------------------------

  private async release(app: AppRecord, source: DeploymentSource & { kind: 'release' }): Promise<DeploymentRecord> {
    const dep = await this.d.apps.createDeployment(app, source);
    this.enqueue(app, dep, [`release of the build of ${dep.codeFrom} (${source.why})`]);
    return dep;
  }

  private enqueue(app: AppRecord, dep: DeploymentRecord, firstLines: string[]): void {
    const rt = this.runtimes.get(app.id);
    this.track(this.during(app.id, () => rt.serialize(() => runDeployment(this.deployments, app.id, dep, firstLines))));
  }

  /** The app's life (see `lives`), made on first use. */
  private life(appId: string): { stop: AbortController; work: Set<Promise<unknown>> } {
    let life = this.lives.get(appId);
    if (!life) {
      life = { stop: new AbortController(), work: new Set() };
      if (this.disposed) life.stop.abort();
      this.lives.set(appId, life);
    }
    return life;
  }

  /** Runs `task` as work on the app's files (removal stops it through `stop`, then waits for it). */
  private async during<T>(appId: string, task: (stop: AbortSignal) => Promise<T>): Promise<T> {
    const life = this.life(appId);
    const work = task(life.stop.signal);
    life.work.add(work);
    try {
      return await work;
    } finally {
      life.work.delete(work);
    }
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch((err: unknown) =>
      this.d.log.error('app task failed', { error: err instanceof Error ? err : String(err) }),
    );
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  private view(app: AppRecord): AppView {
    const rt = this.runtimes.find(app.id);
    return appView(
      app,
      rt?.state ?? (app.liveDeploymentId ? 'starting' : 'created'),
      this.d.baseUrl().replace(/\/+$/, ''),
    );
  }

  private readyWorkspace(accountId: string, workspaceId: string): void {
    const ws = this.d.workspaces.get(accountId, workspaceId);
    if (!ws) throw workspaceNotFound();
    if (ws.yam?.state !== 'ready') throw noYamConfigured();
  }

  private app(accountId: string, workspaceId: string, appId: string): AppRecord {
    this.readyWorkspace(accountId, workspaceId);
    const app = this.d.apps.get(accountId, workspaceId, appId);
    if (!app) throw appNotFound();
    return app;
  }
}
