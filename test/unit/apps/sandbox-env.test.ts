import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppProcess, runToEnd } from '../../../src/apps/app-process.ts';
import { launchPlan, runsAsRoot } from '../../../src/apps/sandbox.ts';
import { testSandbox } from '../../helpers/sandbox-options.ts';

/**
 * The app's env is the app's own: it reaches the app's command, and nothing that runs before the uid drop.
 * When Hearth runs as root, bwrap starts prlimit and setpriv as root with (nearly) every capability; an env
 * of the app's such as LD_PRELOAD=/app/x.so (the archive ships x.so), LD_AUDIT, GCONV_PATH, GLIBC_TUNABLES
 * or a LANG naming a locale file would run the app's code there, outside every limit the sandbox sets. The
 * dynamic loader's own LD_DEBUG shows which programs read the variables, without needing a compiler.
 * Needs bubblewrap (installed where the e2e app tests run).
 */
const SANDBOX = testSandbox('bwrap');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-sandbox-env-'));
fs.chmodSync(dir, 0o755);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function run(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string[]; stderr: string[] }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const r = await runToEnd(launchPlan(SANDBOX, dir, command, env), 20_000, (s, l) =>
    (s === 'stdout' ? stdout : stderr).push(l),
  );
  expect(r.timedOut).toBe(false);
  return { code: r.code, stdout, stderr };
}

describe("the app's env in the bwrap sandbox", () => {
  it('bubblewrap runs here', () => {
    expect(execFileSync(SANDBOX.bwrapPath, ['--version'], { encoding: 'utf8' })).toMatch(/bubblewrap/);
  });

  it(`never reaches the programs that run before the uid drop (prlimit${runsAsRoot() ? ', setpriv: here as root' : ''})`, async () => {
    const r = await run('printf %s "$LD_DEBUG"', { LD_DEBUG: 'libs' });
    expect(r.code).toBe(0);
    const loaded = r.stderr
      .filter((l) => /initialize program:/.test(l))
      .map((l) => l.replace(/^.*initialize program:\s*/, ''));
    expect(loaded).not.toContain('/usr/bin/prlimit');
    expect(loaded).not.toContain('/usr/bin/setpriv');
    expect(r.stdout).toEqual(['libs']); // the app's command has it
  });

  it("reaches the app's command exactly: every name, every value as given, nothing else added", async () => {
    const awkward = `it's "quoted" $HOME \`id\` \\ ; $(id)\nsecond line  `;
    const env = { AWKWARD: awkward, EMPTY: '', PORT: '4321', NODE_ENV: 'production', lower_case_1: 'x' };
    const r = await run(
      'for n in AWKWARD EMPTY PORT NODE_ENV lower_case_1; do printf "%s=[%s]\\n" "$n" "$(printenv "$n")"; done; env | grep -o "^[A-Za-z_][A-Za-z0-9_]*=" | tr -d = | sort | tr "\\n" " "',
      env,
    );
    expect(r.code).toBe(0);
    const text = r.stdout.join('\n');
    expect(text).toContain(`AWKWARD=[${awkward}]`);
    expect(text).toContain('EMPTY=[]');
    expect(text).toContain('PORT=[4321]');
    expect(text).toContain('lower_case_1=[x]');
    const names = r.stdout
      .at(-1)!
      .trim()
      .split(' ')
      .filter((n) => n !== 'PWD');
    expect(names.sort()).toEqual(['AWKWARD', 'EMPTY', 'HOME', 'NODE_ENV', 'PATH', 'PORT', 'lower_case_1'].sort());
  });

  it('keeps a variable whose name looks like a carrier name apart from the one it would carry', async () => {
    const r = await run('printf "%s|%s|%s\\n" "$A" "$HEARTH_CARRIED_A" "${HEARTH_CARRIED_HEARTH_CARRIED_A-unset}"', {
      A: 'one',
      HEARTH_CARRIED_A: 'two',
    });
    expect(r.stdout).toEqual(['one|two|unset']);
  });
});

describe("the app's values and the host's process list", () => {
  it('no process on the host shows a value of the app env in its command line (any local user can read them)', async () => {
    const secret = 'hk_app-secret-value-0451';
    let ready!: () => void;
    const started = new Promise<void>((resolve) => (ready = resolve));
    const proc = new AppProcess(
      launchPlan(SANDBOX, dir, 'echo ready; exec sleep 30', { HEARTH_API_KEY: secret }),
      (_s, line) => line === 'ready' && ready(),
    );
    try {
      await Promise.race([
        started,
        proc.exited.then((e) => Promise.reject(new Error(`exited early: ${JSON.stringify(e)}`))),
      ]);
      const showing: string[] = [];
      for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
        let cmdline: string;
        try {
          cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          continue; // gone meanwhile
        }
        if (cmdline.includes(secret) && Number(pid) !== process.pid)
          showing.push(`${pid}: ${cmdline.replaceAll('\0', ' ').slice(0, 120)}`);
      }
      expect(showing).toEqual([]);
    } finally {
      await proc.stop(2_000);
    }
  });
});
