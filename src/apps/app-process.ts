import { type ChildProcess, spawn } from 'node:child_process';
import { LineSplitter } from './log-ring.ts';
import type { Writable } from 'node:stream';
import { ARGS_FD, type LaunchPlan } from './sandbox.ts';

/**
 * One launched command (a build step or an app's web process) in its own process group, so that a stop
 * reaches everything it started: SIGTERM to the group, SIGKILL after the grace period. Output arrives
 * line by line through `onLine`. `exited` resolves once (never rejects; a spawn failure is an exit with
 * code null and `error` set), after `afterExit` (what the launch holds for the process, such as its
 * network namespace) finished. Owned by whoever started it; `stop()` is idempotent. Main thread.
 */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: string;
}

export class AppProcess {
  readonly exited: Promise<ProcessExit>;
  private readonly child: ChildProcess;
  private done = false;
  private stopping: Promise<ProcessExit> | null = null;

  constructor(
    plan: LaunchPlan,
    onLine: (stream: 'stdout' | 'stderr', line: string) => void,
    afterExit: () => Promise<void> = async () => {},
  ) {
    this.child = spawn(plan.command, plan.args, {
      cwd: plan.cwd,
      env: plan.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...(plan.argsFd ? (['pipe'] as const) : [])],
    });
    if (plan.argsFd) {
      const args = this.child.stdio[ARGS_FD] as Writable;
      args.on('error', () => {}); // a launcher that died before reading it: its exit says why
      args.end(plan.argsFd);
    }
    const out = new LineSplitter((l) => onLine('stdout', l));
    const err = new LineSplitter((l) => onLine('stderr', l));
    this.child.stdout!.on('data', (d: Buffer) => out.push(d));
    this.child.stderr!.on('data', (d: Buffer) => err.push(d));
    this.exited = new Promise((resolve) => {
      let spawnError: string | undefined;
      this.child.once('error', (e) => {
        spawnError = e.message;
        if (this.child.pid === undefined) {
          this.done = true;
          void afterExit().finally(() => resolve({ code: null, signal: null, error: spawnError }));
        }
      });
      this.child.once('close', (code, signal) => {
        out.flush();
        err.flush();
        this.done = true;
        void afterExit().finally(() => resolve({ code, signal, ...(spawnError ? { error: spawnError } : {}) }));
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return !this.done;
  }

  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves when it exited. */
  stop(graceMs: number): Promise<ProcessExit> {
    this.stopping ??= (async () => {
      this.signal('SIGTERM');
      const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
      const exit = await this.exited;
      clearTimeout(timer);
      this.signal('SIGKILL'); // anything the group left behind
      return exit;
    })();
    return this.stopping;
  }

  kill(): void {
    this.signal('SIGKILL');
  }

  private signal(sig: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // the group is gone
    }
  }
}

/** Runs a command to its end within `timeoutMs`; the group is killed at the deadline, or when `signal` aborts. */
export async function runToEnd(
  plan: LaunchPlan,
  timeoutMs: number,
  onLine: (stream: 'stdout' | 'stderr', line: string) => void,
  signal?: AbortSignal,
  afterExit?: () => Promise<void>,
): Promise<ProcessExit & { timedOut: boolean }> {
  const p = new AppProcess(plan, onLine, afterExit);
  const abort = () => p.kill();
  signal?.addEventListener('abort', abort, { once: true });
  if (signal?.aborted) p.kill();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    p.kill();
  }, timeoutMs);
  const exit = await p.exited;
  clearTimeout(timer);
  signal?.removeEventListener('abort', abort);
  p.kill();
  return { ...exit, timedOut };
}
