import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { networkProblem } from './app-network.ts';
import { isolatesNetwork, launchPlan, type SandboxOptions } from './sandbox.ts';

/** Why the configured sandbox cannot run here (a trial run of `true` inside it, a trial network namespace), or null. */
export async function sandboxProblem(s: SandboxOptions, rootDir: string): Promise<string | null> {
  if (s.mode === 'none') return null;
  await fs.promises.mkdir(rootDir, { recursive: true, mode: 0o711 });
  const dir = await fs.promises.mkdtemp(path.join(rootDir, '.sandbox-check-'));
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
