import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  appNotFound,
  deploymentNotFound,
  invalidArchive,
  invalidRequest,
  noYamConfigured,
  repositoryNotAllowed,
  repositoryUnreachable,
  workspaceNotFound,
} from '../errors/index.ts';
import { AppRepository } from './app-repository.ts';
import type { AppRecord, DeploymentRecord, DeploymentSource } from '../store/database.ts';
import { type AppHostDeps, type AppHostOptions, DEFAULT_APP_HOST_OPTIONS } from './app-host-options.ts';
import { AppFileLayout } from './app-file-layout.ts';
import { parseAppInput, parseAppPatch, parseRepositoryInput, parseRollbackInput } from './app-input.ts';
import { type AppRunState, AppRuntime, type LaunchInput, type RuntimeOptions } from './app-runtime.ts';
import { appView, type AppView, deploymentView, type DeploymentView } from './app-views.ts';
import { ArchiveError, unpackArchive } from './archive-unpacker.ts';
import {
  buildApp,
  DeploymentFailure,
  fetchRepository,
  isAcceptableRepositoryUrl,
  probeRepository,
  startCommand,
} from './deployment-builder.ts';
import type { LogLine } from './log-ring.ts';
import { decideRepository } from './repository-policy.ts';
import { apiUnreachableReason, hearthApiUrl, networkProblem, removeStaleNamespaces } from './app-network.ts';
import { handOver, isolatesNetwork, launchPlan } from './sandbox.ts';

export type { AppHostDeps, AppHostOptions } from './app-host-options.ts';
export { DEFAULT_APP_HOST_OPTIONS } from './app-host-options.ts';

export const APP_STATES: readonly AppRunState[] = ['created', 'starting', 'running', 'crashed', 'stopped'];

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
  private readonly runtimes = new Map<string, AppRuntime>();
  private readonly pending = new Set<Promise<void>>();
  /** The fetch and build steps running now, by app (an app's deployments run one at a time): stopped when the app goes. */
  private readonly builds = new Map<string, AbortController>();
  private disposed = false;
  private readonly layout: AppFileLayout;

  constructor(
    private readonly d: AppHostDeps,
    options: Pick<AppHostOptions, 'rootDir' | 'sandbox'> & Partial<AppHostOptions>,
  ) {
    this.options = { ...DEFAULT_APP_HOST_OPTIONS, ...options };
    this.layout = new AppFileLayout(this.options.rootDir);
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
    return await this.sandboxProblem();
  }

  /** Why the configured sandbox cannot run here (a trial run of `true` inside it, a trial network namespace), or null. */
  async sandboxProblem(): Promise<string | null> {
    const s = this.options.sandbox;
    if (s.mode === 'none') return null;
    await fs.promises.mkdir(this.options.rootDir, { recursive: true, mode: 0o711 });
    const dir = await fs.promises.mkdtemp(path.join(this.options.rootDir, '.sandbox-check-'));
    try {
      const plan = launchPlan(s, dir, 'exit 0', {});
      const failure = await new Promise<{ code: string | number | null; stderr: string } | null>((resolve) => {
        execFile(plan.command, plan.args, { env: plan.env, cwd: plan.cwd, timeout: 10_000 }, (err, _stdout, stderr) => {
          resolve(
            err ? { code: (err as NodeJS.ErrnoException).code ?? null, stderr: String(stderr) || err.message } : null,
          );
        });
      });
      if (failure === null) return isolatesNetwork(s) ? await networkProblem(s.network) : null;
      if (failure.code === 'ENOENT')
        return `the sandbox tool bubblewrap ('${s.bwrapPath}') is not installed: install the Debian package bubblewrap, or start Hearth with --app-sandbox none (no isolation)`;
      return `the sandbox tool bubblewrap ('${s.bwrapPath}') cannot run here: ${failure.stderr.trim().slice(0, 300)}`;
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
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
      const rt = this.runtime(app.id);
      if (app.liveDeploymentId === null) continue;
      rt.setState('starting');
      this.track(rt.restartNow());
    }
    this.updateGauge();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const b of this.builds.values()) b.abort();
    await Promise.all([...this.runtimes.values()].map((r) => r.dispose()));
  }

  // Apps ------------------------------------------------------------------------------------------------

  async createApp(accountId: string, workspaceId: string, body: unknown): Promise<AppView> {
    this.readyWorkspace(accountId, workspaceId);
    const input = parseAppInput(body);
    const id = AppRepository.newAppId();
    const key = input.apiKeyEnv === null ? null : await this.d.keys.create(`app:${id}`, accountId);
    const app = await this.d.apps.create(id, { accountId, workspaceId, ...input }, key && { id: key.id, key: key.key });
    this.runtime(id);
    this.updateGauge();
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
    this.builds.get(app.id)?.abort();
    const rt = this.runtimes.get(app.id);
    this.runtimes.delete(app.id);
    await rt?.dispose();
    if (app.apiKeyId) await this.d.keys.revoke(app.apiKeyId);
    await this.d.apps.delete(app.id);
    await fs.promises.rm(this.layout.appDir(app), { recursive: true, force: true });
    this.updateGauge();
    this.d.log.info('app deleted', { appId: app.id });
  }

  // Deployments -----------------------------------------------------------------------------------------

  /** A .tar.gz upload: unpacked (safely) before the answer, so a bad archive is a 400; the build runs after. */
  async deployArchive(accountId: string, workspaceId: string, appId: string, archive: Buffer): Promise<DeploymentView> {
    const app = this.app(accountId, workspaceId, appId);
    const deploymentId = AppRepository.newDeploymentId();
    const codeDir = this.layout.codeDir(app, deploymentId);
    await fs.promises.mkdir(codeDir, { recursive: true, mode: 0o755 });
    try {
      await unpackArchive(archive, codeDir, {
        maxFiles: this.options.maxFiles,
        maxBytes: this.options.maxUnpackedBytes,
      });
    } catch (err) {
      await fs.promises.rm(codeDir, { recursive: true, force: true });
      if (err instanceof ArchiveError) throw invalidArchive(err.message);
      throw err;
    }
    const dep = await this.d.apps.createDeployment(app, { kind: 'archive', bytes: archive.length }, deploymentId);
    this.enqueue(app, dep, [`unpacked the archive (${archive.length} bytes)`]);
    return deploymentView(dep);
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
    const rt = this.runtime(appId);
    await rt.serialize(() => rt.restartNow());
    return this.view(this.d.apps.getById(appId) ?? app);
  }

  logs(accountId: string, workspaceId: string, appId: string, lines: number): LogLine[] {
    this.app(accountId, workspaceId, appId);
    return this.runtime(appId).logs.tail(lines);
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
    return this.runtime(appId).logs.subscribe(onLine, onEnd);
  }

  // The proxy's view ------------------------------------------------------------------------------------

  /** Where `/apps/{appId}/...` goes: the live port, or why not (404 / 503 with a Retry-After). */
  proxyTarget(appId: string): { port: number } | { missing: true } | { retryAfter: number } {
    const app = this.d.apps.getById(appId);
    if (!app) return { missing: true };
    const rt = this.runtimes.get(appId);
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
    const rt = this.runtime(app.id);
    this.track(rt.serialize(() => this.runDeployment(app.id, dep, firstLines)));
  }

  /** queued -> fetching -> building -> starting -> live, or failed with a reason; the old live one is retired. */
  private async runDeployment(appId: string, dep: DeploymentRecord, firstLines: string[]): Promise<void> {
    const log: string[] = [...firstLines];
    const appendLog = (line: string) => {
      log.push(line);
      if (log.length > 2000) log.splice(0, log.length - 2000);
    };
    const state = (s: DeploymentRecord['state'], reason?: string) =>
      this.d.apps.setDeploymentState(dep.id, s, {
        buildLog: `${log.join('\n')}\n`,
        ...(reason !== undefined ? { reason } : {}),
      });
    const original = this.d.apps.getById(appId);
    if (!original || this.disposed) return;
    let app: AppRecord | undefined = original;
    const rt = this.runtime(appId);
    const codeDir = this.layout.codeDir(original, dep.codeFrom);
    const build = new AbortController();
    this.builds.set(appId, build);
    try {
      if (dep.source.kind !== 'release') {
        await state('fetching');
        if (dep.source.kind === 'repository') {
          const commit = await fetchRepository(
            dep.source.repository,
            this.options.repositories,
            dep.source.ref,
            codeDir,
            this.options.buildTimeoutMs,
            appendLog,
            build.signal,
          );
          await this.d.apps.setDeploymentState(dep.id, 'fetching', { source: { ...dep.source, commit } });
        }
        await handOver(codeDir, this.options.sandbox.mode);
        await state('building');
        await buildApp(
          codeDir,
          this.options.sandbox,
          this.d.apps.envOf(original).env,
          this.options.buildTimeoutMs,
          appendLog,
          build.signal,
        );
      }
      const command = startCommand(codeDir);
      await state('starting');
      app = this.d.apps.getById(appId);
      if (!app) return;
      const launched = await rt.launch(this.launchInput(app, dep.id, codeDir, command));
      appendLog(`healthy: GET ${app.healthPath} answered {"ok":true}`);
      const previous = app.liveDeploymentId;
      await this.d.apps.setLive(appId, dep.id);
      rt.goLive(launched);
      await state('live');
      if (previous && previous !== dep.id) await this.d.apps.setDeploymentState(previous, 'retired');
      this.d.metrics.appDeployments.inc({ result: 'live' });
      this.d.log.info('deployment live', { appId, deploymentId: dep.id });
    } catch (err) {
      const reason =
        err instanceof DeploymentFailure ||
        (err instanceof Error && /^(build_failed|health_check_failed)/.test(err.message))
          ? (err as Error).message
          : `build_failed: ${(err as Error).message}`;
      // What the process said before it failed its checks belongs in the build log too.
      for (const l of rt.logs
        .tail(200)
        .filter((l) => l.deploymentId === dep.id && l.stream !== 'hearth')
        .slice(-20))
        appendLog(`[${l.stream}] ${l.line}`);
      appendLog(reason);
      await state('failed', reason);
      if (dep.source.kind !== 'release')
        await fs.promises.rm(codeDir, { recursive: true, force: true }).catch(() => {});
      this.d.metrics.appDeployments.inc({ result: 'failed' });
      this.d.log.warn('deployment failed', { appId, deploymentId: dep.id, reason });
    } finally {
      if (this.builds.get(appId) === build) this.builds.delete(appId);
      // The whole build log beside the releases (the record keeps its tail); not for an app deleted meanwhile.
      if (this.d.apps.getById(appId)) {
        const dir = this.layout.logDir(original);
        await fs.promises
          .mkdir(dir, { recursive: true })
          .then(() => fs.promises.writeFile(path.join(dir, `${dep.id}.log`), `${log.join('\n')}\n`))
          .catch(() => {});
      }
      this.updateGauge();
    }
  }

  /** The process's environment: exactly the app's env, NODE_ENV (production unless set), PORT (added at launch), HEARTH_API_URL and the key variable; PATH and HOME come from the sandbox. */
  private launchInput(app: AppRecord, deploymentId: string, codeDir: string, command: string): LaunchInput {
    const { env, unreadable } = this.d.apps.envOf(app);
    if (unreadable.length > 0)
      this.d.log.warn('app env values that no longer decrypt are left out (was the master key changed?)', {
        appId: app.id,
        names: unreadable,
      });
    const full: Record<string, string> = { NODE_ENV: 'production', ...env };
    if (app.apiKeyEnv !== null) {
      const key = this.d.apps.apiKeyOf(app);
      if (key !== null) full[app.apiKeyEnv] = key;
    }
    const apiPort = this.d.apiPort();
    if (apiPort !== null)
      full.HEARTH_API_URL = hearthApiUrl(
        isolatesNetwork(this.options.sandbox) ? 'isolated' : 'host',
        this.options.listenHost,
        apiPort,
      );
    return { deploymentId, codeDir, command, env: full, healthPath: app.healthPath, apiPort };
  }

  private runtime(appId: string): AppRuntime {
    let rt = this.runtimes.get(appId);
    if (!rt) {
      const options: RuntimeOptions = {
        sandbox: this.options.sandbox,
        startTimeoutMs: this.options.startTimeoutMs,
        gracePeriodMs: this.options.gracePeriodMs,
        stopTimeoutMs: this.options.stopTimeoutMs,
        backoffInitialMs: this.options.backoffInitialMs,
        backoffMaxMs: this.options.backoffMaxMs,
      };
      rt = new AppRuntime(appId, options, {
        onState: () => this.updateGauge(),
        onRestart: () => this.d.metrics.appRestarts.inc(),
        relaunchInput: () => {
          const app = this.d.apps.getById(appId);
          if (!app?.liveDeploymentId) return null;
          const dep = this.d.apps.getDeployment(appId, app.liveDeploymentId);
          if (!dep) return null;
          const codeDir = this.layout.codeDir(app, dep.codeFrom);
          try {
            return this.launchInput(app, dep.id, codeDir, startCommand(codeDir));
          } catch (err) {
            // The app changed its own files (its Procfile, package.json) so that it cannot start again: it stays crashed, saying why.
            this.runtimes.get(appId)?.logs.push('hearth', dep.id, `cannot restart: ${(err as Error).message}`);
            this.d.log.warn('app cannot restart', { appId, reason: (err as Error).message });
            return null;
          }
        },
      });
      this.runtimes.set(appId, rt);
    }
    return rt;
  }

  private updateGauge(): void {
    const counts = Object.fromEntries(APP_STATES.map((s) => [s, 0])) as Record<AppRunState, number>;
    for (const rt of this.runtimes.values()) counts[rt.state]++;
    for (const s of APP_STATES) this.d.metrics.apps.set({ state: s }, counts[s]);
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch((err: unknown) =>
      this.d.log.error('app task failed', { error: err instanceof Error ? err : String(err) }),
    );
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  private view(app: AppRecord): AppView {
    const rt = this.runtimes.get(app.id);
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
