import { AppProcess } from './app-process.ts';
import { awaitHealthy, freeLoopbackPort } from './health-check.ts';
import { LogRing } from './log-ring.ts';
import { IsolatedNetwork } from './app-network.ts';
import { isolatesNetwork, launchPlan, type SandboxOptions } from './sandbox.ts';

/**
 * The running side of one app (its supervisor): the process of the live deployment, the state shown in
 * the API, the log ring, and crash restarts with exponential backoff (1 s doubling to 60 s; a process that
 * stayed up 60 s starts the backoff over). A new process always starts beside the current one and takes
 * the traffic only once healthy (`launch` then `goLive`); the previous one is stopped after the grace
 * period. Deployments of one app run one at a time through `serialize`. Main thread; owned by AppHost;
 * `dispose()` stops everything and is idempotent.
 */
import type { AppRunState } from './app-view-types.ts';

export type { AppRunState };

export interface RuntimeOptions {
  sandbox: SandboxOptions;
  startTimeoutMs: number;
  /** How long a replaced process keeps serving requests already in flight. */
  gracePeriodMs: number;
  /** SIGTERM -> SIGKILL. */
  stopTimeoutMs: number;
  /** Backoff bounds. Defaults: 1 s, 60 s. */
  backoffInitialMs: number;
  backoffMaxMs: number;
}

/** What a launch needs from the app's record: read when it starts (env changes apply to the next launch). */
export interface LaunchInput {
  deploymentId: string;
  codeDir: string;
  command: string;
  env: Record<string, string>;
  healthPath: string;
  /** Hearth's public port, which the app reaches at HEARTH_API_URL (forwarded into an isolated namespace); null before Hearth listens. */
  apiPort: number | null;
}

export interface Launched {
  deploymentId: string;
  port: number;
  process: AppProcess;
  startedAt: number;
}

export interface RuntimeEvents {
  /** The state changed (metrics). */
  onState(): void;
  /** A crashed process was restarted (metrics, successful or not). */
  onRestart(): void;
  /** What to launch for a restart of the live deployment (reads the current record); null = nothing live. */
  relaunchInput(): LaunchInput | null;
}

export class AppRuntime {
  state: AppRunState = 'created';
  readonly logs = new LogRing();
  private live: Launched | null = null;
  private readonly retiring = new Set<Launched>();
  /** Processes started and not yet healthy (launch is waiting on them): stopped with the rest. */
  private readonly launching = new Set<AppProcess>();
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | null = null;
  private restartAt = 0;
  private attempt = 0;
  private disposed = false;

  constructor(
    readonly appId: string,
    private readonly options: RuntimeOptions,
    private readonly events: RuntimeEvents,
  ) {}

  /** The port of the process taking traffic, or null. */
  get livePort(): number | null {
    return this.live?.port ?? null;
  }

  get liveDeploymentId(): string | null {
    return this.live?.deploymentId ?? null;
  }

  /** Seconds until the next restart attempt while crashed (for Retry-After). */
  retryAfterSeconds(): number {
    if (this.state === 'crashed' && this.restartTimer)
      return Math.max(
        1,
        Math.ceil((this.restartAt - Date.now()) / 1000) + Math.ceil(this.options.startTimeoutMs / 1000),
      );
    return Math.max(1, Math.ceil(this.options.startTimeoutMs / 1000));
  }

  /** Runs `task` after every task queued before it (deployments of one app never overlap). */
  serialize(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Starts a process for `input` beside the live one and waits until it is healthy; throws the reason otherwise. */
  async launch(input: LaunchInput): Promise<Launched> {
    if (this.disposed) throw new Error('health_check_failed: Hearth is shutting down');
    const port = await freeLoopbackPort();
    let network: IsolatedNetwork | undefined;
    if (isolatesNetwork(this.options.sandbox)) {
      try {
        network = await IsolatedNetwork.open(this.options.sandbox.network, {
          appPort: port,
          ...(input.apiPort !== null ? { apiPort: input.apiPort } : {}),
        });
      } catch (err) {
        const reason = `health_check_failed: the app's network namespace could not be made: ${(err as Error).message}`;
        this.logs.push('hearth', input.deploymentId, reason);
        throw new Error(reason);
      }
    }
    const plan = launchPlan(
      this.options.sandbox,
      input.codeDir,
      input.command,
      { ...input.env, PORT: String(port) },
      network,
    );
    const proc = new AppProcess(
      plan,
      (stream, line) => this.logs.push(stream, input.deploymentId, line),
      network && (() => network.close()),
    );
    this.logs.push('hearth', input.deploymentId, `starting: ${input.command} (port ${port})`);
    // Disposed while the network was being made: stop at once. Disposed later: stopAll stops it, ending the wait.
    this.launching.add(proc);
    let problem: string | null;
    try {
      problem = this.disposed
        ? null
        : await awaitHealthy(port, input.healthPath, this.options.startTimeoutMs, proc.exited);
    } finally {
      this.launching.delete(proc);
    }
    if (problem !== null || this.disposed) {
      await proc.stop(this.options.stopTimeoutMs);
      const reason = problem ?? 'health_check_failed: Hearth is shutting down';
      this.logs.push('hearth', input.deploymentId, reason);
      throw new Error(reason);
    }
    this.logs.push('hearth', input.deploymentId, `healthy on ${input.healthPath}`);
    return { deploymentId: input.deploymentId, port, process: proc, startedAt: Date.now() };
  }

  /** `next` takes the traffic; the previous process (if any) is stopped after the grace period. */
  goLive(next: Launched): void {
    if (this.disposed) {
      void next.process.stop(this.options.stopTimeoutMs);
      return;
    }
    const previous = this.live;
    this.live = next;
    this.cancelRestart();
    this.setState('running');
    void next.process.exited.then((exit) => {
      if (this.live !== next || this.disposed) return;
      const upMs = Date.now() - next.startedAt;
      this.live = null;
      this.logs.push(
        'hearth',
        next.deploymentId,
        `process exited (${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}) after ${Math.round(upMs / 1000)} s`,
      );
      if (upMs >= this.options.backoffMaxMs) this.attempt = 0;
      this.scheduleRestart();
    });
    if (previous) this.retire(previous);
  }

  /** A restart asked for (API, env change without new code): a fresh process of the live deployment, zero downtime. */
  async restartNow(): Promise<void> {
    this.cancelRestart();
    const input = this.events.relaunchInput();
    if (!input) return;
    if (this.live === null) this.setState('starting');
    try {
      this.goLive(await this.launch(input));
    } catch {
      if (this.live === null) this.scheduleRestart();
    }
  }

  /** Nothing is live any more (app deleted, or Hearth stopping): stop every process, one still starting included. */
  async stopAll(): Promise<void> {
    this.cancelRestart();
    const all = [...this.retiring, ...(this.live ? [this.live] : [])].map((l) => l.process);
    all.push(...this.launching);
    this.live = null;
    this.retiring.clear();
    await Promise.all(all.map((p) => p.stop(this.options.stopTimeoutMs)));
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.stopAll();
    this.setState('stopped');
    this.logs.close();
  }

  setState(state: AppRunState): void {
    if (this.state === state) return;
    this.state = state;
    this.events.onState();
  }

  private retire(old: Launched): void {
    this.retiring.add(old);
    const timer = setTimeout(() => {
      void old.process.stop(this.options.stopTimeoutMs).then(() => this.retiring.delete(old));
    }, this.options.gracePeriodMs);
    timer.unref();
  }

  private scheduleRestart(): void {
    if (this.disposed) return;
    const delay = Math.min(this.options.backoffMaxMs, this.options.backoffInitialMs * 2 ** this.attempt);
    this.attempt++;
    this.setState('crashed');
    this.restartAt = Date.now() + delay;
    this.logs.push('hearth', null, `restarting in ${delay >= 1000 ? `${delay / 1000} s` : `${delay} ms`}`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      const input = this.events.relaunchInput();
      if (!input || this.disposed) return;
      this.events.onRestart();
      this.setState('starting');
      this.launch(input).then(
        (launched) => this.goLive(launched),
        () => this.scheduleRestart(),
      );
    }, delay);
    this.restartTimer.unref();
  }

  private cancelRestart(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
  }
}
