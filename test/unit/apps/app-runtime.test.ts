import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AppRuntime, type AppRunState, type LaunchInput, type RuntimeOptions } from '../../../src/apps/app-runtime.ts';

/**
 * The supervisor with real processes (sandbox `none`, so no bubblewrap needed here; the sandboxed path is
 * covered by test/e2e/apps/apps.test.ts): crash restarts back off by doubling up to the cap.
 */
const dirs: string[] = [];
const runtimes: AppRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.dispose();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Supervisor options without a sandbox (no bubblewrap needed here), backing off 100 ms up to 400 ms. */
const runtimeOptions = (startTimeoutMs: number): RuntimeOptions => ({
  sandbox: {
    mode: 'none',
    bwrapPath: 'bwrap',
    memoryBytes: 2 << 30,
    maxProcesses: 4096,
    maxOpenFiles: 1024,
    network: { mode: 'host', pastaPath: 'pasta' },
  },
  startTimeoutMs,
  gracePeriodMs: 0,
  stopTimeoutMs: 1000,
  backoffInitialMs: 100,
  backoffMaxMs: 400,
});

/** An app that exits shortly after its first health check passed: a crash loop. */
function crashingApp(): LaunchInput {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-runtime-'));
  dirs.push(dir);
  fs.writeFileSync(
    path.join(dir, 'server.js'),
    `require('node:http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); s.end('{"ok":true}'); setTimeout(() => process.exit(7), 150); })
      .listen(Number(process.env.PORT), '127.0.0.1');`,
  );
  return {
    deploymentId: 'dep_test',
    codeDir: dir,
    command: `${process.execPath} server.js`,
    env: {},
    healthPath: '/health',
    apiPort: null,
  };
}

describe('AppRuntime crash restarts', () => {
  it('backs off 100, 200, 400, then stays at the 400 ms cap, counting each restart', async () => {
    const input = crashingApp();
    const states: AppRunState[] = [];
    let restarts = 0;
    const rt = new AppRuntime('app_test', runtimeOptions(20_000), {
      onState: () => states.push(rt.state),
      onRestart: () => restarts++,
      relaunchInput: () => input,
    });
    runtimes.push(rt);
    rt.goLive(await rt.launch(input));
    const delays = () =>
      rt.logs
        .tail(1000)
        .filter((l) => l.line.startsWith('restarting in'))
        .map((l) => l.line);
    for (let i = 0; i < 400 && delays().length < 5; i++) await new Promise((r) => setTimeout(r, 50));
    expect(delays().slice(0, 5)).toEqual([
      'restarting in 100 ms',
      'restarting in 200 ms',
      'restarting in 400 ms',
      'restarting in 400 ms',
      'restarting in 400 ms',
    ]);
    expect(restarts).toBeGreaterThanOrEqual(4);
    expect(states).toContain('crashed');
    expect(states).toContain('running');
    expect(rt.logs.tail(1000).some((l) => l.stream === 'hearth' && l.line.startsWith('process exited (code 7)'))).toBe(
      true,
    );
  }, 60_000);
});

describe('AppRuntime dispose', () => {
  it('stops a process still starting (never healthy): the launch ends at once and the process is gone', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-runtime-'));
    dirs.push(dir);
    const pidFile = path.join(dir, 'pid');
    // Listens, but never answers its health check: the launch would wait the whole start timeout.
    fs.writeFileSync(
      path.join(dir, 'server.js'),
      `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
       require('node:http').createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');`,
    );
    const rt = new AppRuntime('app_slow', runtimeOptions(60_000), {
      onState: () => {},
      onRestart: () => {},
      relaunchInput: () => null,
    });
    const launch = rt.launch({
      deploymentId: 'dep_slow',
      codeDir: dir,
      command: `${process.execPath} server.js`,
      env: {},
      healthPath: '/health',
      apiPort: null,
    });
    const settled = launch.then(
      () => 'healthy',
      (err: Error) => err.message,
    );
    // The file can exist before its pid is written in it (pid 0 would be this test's own process group).
    const pidIn = () => (fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : 0);
    for (let i = 0; i < 200 && !(pidIn() > 0); i++) await new Promise((r) => setTimeout(r, 25));
    const pid = pidIn();
    expect(pid).toBeGreaterThan(0);
    const started = Date.now();
    await rt.dispose();
    // Before: dispose stopped only live and retiring processes; this one ran on, the launch waiting 60 s.
    expect(await settled).toMatch(/health_check_failed/);
    expect(Date.now() - started).toBeLessThan(10_000);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 20)); // killed, then reaped
    expect(alive()).toBe(false);
  }, 20_000);
});
