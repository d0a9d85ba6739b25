import { spawnSync } from 'node:child_process';

/**
 * Whether `command args` runs on this host and exits 0 (default `--version`): how a test finds out whether a host
 * tool it needs (promtool, prometheus, haproxy) is installed, before it skips with a warning that says so.
 */
export function hostToolRuns(command: string, args: readonly string[] = ['--version']): boolean {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return !r.error && r.status === 0;
}
