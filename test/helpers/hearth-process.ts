import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { collectOutput } from './child-output.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/hearth.js');

export interface HearthProcess {
  baseUrl: string;
  port: number;
  /** An API key created with `hearth keys create` before start. */
  key: string;
  dataDir: string;
  proc: ChildProcess;
  /** Everything the server wrote to stderr/stdout so far. */
  logs(): string;
  /** Polls /health until 200 (or throws after timeoutMs). */
  waitReady(timeoutMs?: number): Promise<void>;
  /** SIGTERM (or the given signal) and wait for exit. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs the `hearth` CLI synchronously (keys, workspaces ...); `input`: what it reads on stdin. */
export function hearthCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, input });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Creates a user of the default account with `hearth users create` (the password on stdin), as an operator would. */
export function createUser(
  dataDir: string,
  who: { email: string; password: string },
  role = 'owner',
): { status: number | null; stdout: string; stderr: string } {
  const args = ['users', 'create', '--email', who.email, '--account', 'default', '--role', role, '--data-dir', dataDir];
  return hearthCli(args, {}, `${who.password}\n`);
}

/** Creates an API key with `hearth keys create` (in `account`, or the default one) and answers it. */
export function createKey(dataDir: string, name = 'test', env: NodeJS.ProcessEnv = {}, account?: string): string {
  const inAccount = account === undefined ? [] : ['--account', account];
  const r = hearthCli(['keys', 'create', '--name', name, ...inAccount, '--data-dir', dataDir, '--json'], env);
  if (r.status !== 0) throw new Error(`keys create failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

/** Starts `hearth serve` as a child process on a free port with a fresh data dir (unless given). */
/** `bin`: another checkout's `bin/hearth.js` (a benchmark's baseline); default this one's. */
export async function startHearthProcess(options: {
  args: string[];
  env?: NodeJS.ProcessEnv;
  dataDir?: string;
  bin?: string;
}): Promise<HearthProcess> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-test-'));
  const key = createKey(dataDir, 'test', options.env); // the server's records (HEARTH_DATABASE_URL in env: PostgreSQL)
  const proc = spawn(
    process.execPath,
    [options.bin ?? BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...options.args],
    {
      env: { ...process.env, HEARTH_LOG_LEVEL: 'debug', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs = collectOutput(proc);
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs()}`)), 30_000);
    const check = () => {
      const m = /"msg":"listening".*?"port":(\d+)/.exec(logs());
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stderr!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${logs()}`));
    });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  let stopping: Promise<number | null> | null = null;
  return {
    baseUrl,
    port,
    key,
    dataDir,
    proc,
    logs,
    async waitReady(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const r = await fetch(`${baseUrl}/health`).catch(() => null);
        if (r?.status === 200) return;
        const body = r ? ((await r.json()) as { state?: string; error?: string }) : null;
        if (body?.state === 'failed') throw new Error(`model failed: ${body.error}\n${logs()}`);
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error(`not ready after ${timeoutMs} ms:\n${logs()}`);
    },
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      stopping ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
        const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        const code = await exited;
        clearTimeout(timer);
        return code;
      })();
      return stopping;
    },
  };
}

/** `hearth serve` settings: flag name without `--` -> value; `true`: a flag without a value. */
export type ServeSettings = Record<string, string | number | true>;

/** The `hearth serve` flags of `settings`, in their order. */
export function serveFlags(settings: ServeSettings): string[] {
  return Object.entries(settings).flatMap(([flag, v]) => (v === true ? [`--${flag}`] : [`--${flag}`, String(v)]));
}

/**
 * `hearth serve` arguments for one model: `--model`, `--model-id`, then one worker and two slots unless `settings`
 * says otherwise, and the other settings given.
 */
export function modelArgs(model: string, modelId: string, settings: ServeSettings = {}): string[] {
  return ['--model', model, '--model-id', modelId, ...serveFlags({ slots: 2, workers: 1, ...settings })];
}

/** modelArgs on the native engine. */
export function nativeModelArgs(model: string, modelId: string, settings: ServeSettings = {}): string[] {
  return modelArgs(model, modelId, { engine: 'native', ...settings });
}

/**
 * `hearth serve` arguments for a server whose local model is beside the point (workspaces, apps, providers,
 * records): `model` on the instant engine, then `settings` (nothing else defaulted; the default model id unless
 * `settings` names one).
 */
export function instantModelArgs(model: string, settings: ServeSettings = {}): string[] {
  return ['--model', model, '--engine', 'instant', ...serveFlags(settings)];
}
