import type { AppRecord } from '../store/database.ts';
import type { AppHostDeps, AppHostOptions } from './app-host-options.ts';
import type { AppFileLayout } from './app-file-layout.ts';
import { type AppRunState, AppRuntime, type LaunchInput, type RuntimeOptions } from './app-runtime.ts';
import { hearthApiUrl } from './app-network.ts';
import { startCommand } from './deployment-builder.ts';
import { isolatesNetwork } from './sandbox.ts';

export const APP_STATES: readonly AppRunState[] = ['created', 'starting', 'running', 'crashed', 'stopped'];

/**
 * The app host's runtimes (one process supervisor per app, app-runtime.ts), by app id, and what a launch gets: the
 * process's environment and code directory. Main thread; owned by the AppHost, which disposes the runtimes it
 * removes and all of them at its own dispose.
 */
export class AppRuntimes {
  private readonly byApp = new Map<string, AppRuntime>();

  constructor(
    private readonly d: AppHostDeps,
    private readonly options: AppHostOptions,
    private readonly layout: AppFileLayout,
  ) {}

  find(appId: string): AppRuntime | undefined {
    return this.byApp.get(appId);
  }

  /** Forgets the app's runtime and returns it (the caller disposes it). */
  remove(appId: string): AppRuntime | undefined {
    const rt = this.byApp.get(appId);
    this.byApp.delete(appId);
    return rt;
  }

  all(): AppRuntime[] {
    return [...this.byApp.values()];
  }

  /** The app's runtime, made (state created) on first use. */
  get(appId: string): AppRuntime {
    let rt = this.byApp.get(appId);
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
            this.byApp.get(appId)?.logs.push('hearth', dep.id, `cannot restart: ${(err as Error).message}`);
            this.d.log.warn('app cannot restart', { appId, reason: (err as Error).message });
            return null;
          }
        },
      });
      this.byApp.set(appId, rt);
    }
    return rt;
  }

  /** The process's environment: exactly the app's env, NODE_ENV (production unless set), PORT (added at launch), HEARTH_API_URL and the key variable; PATH and HOME come from the sandbox. */
  launchInput(app: AppRecord, deploymentId: string, codeDir: string, command: string): LaunchInput {
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

  /** The apps gauge by state, set from every runtime on this host. */
  updateGauge(): void {
    const counts = Object.fromEntries(APP_STATES.map((s) => [s, 0])) as Record<AppRunState, number>;
    for (const rt of this.byApp.values()) counts[rt.state]++;
    for (const s of APP_STATES) this.d.metrics.apps.set({ state: s }, counts[s]);
  }
}
