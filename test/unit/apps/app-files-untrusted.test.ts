import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp, DeploymentFailure, startCommand } from '../../../src/apps/deployment-builder.ts';
import { useTempDirs } from '../../helpers/temp-dirs.ts';
import { testSandbox } from '../../helpers/sandbox-options.ts';
import { rejectionBy } from '../../helpers/unit-rejection.ts';

/**
 * An app's directory is written by the app (its archive, its repository, its build steps and its running
 * process, all as the sandbox uid), while Hearth reads `package.json` and `Procfile` from it on the host,
 * outside the sandbox and with Hearth's rights. Those reads must not follow a symbolic link (a repository
 * may hold `package.json -> /etc/shadow`; an app may plant one) nor open a fifo or device (an app can
 * `mkfifo Procfile`; opening it blocks Hearth's main thread): the deployment fails saying so, and nothing
 * of the link's target reaches the build log or the start command.
 */
const tmp = useTempDirs('hearth-app-files-');

const SECRET = 'TOP-SECRET-host-file-4711';
const NO_SANDBOX = testSandbox('none');

function hostSecret(content: string): string {
  const file = path.join(tmp(), 'secret.txt');
  fs.writeFileSync(file, content);
  return file;
}

const failure = (run: () => unknown): Promise<DeploymentFailure> =>
  rejectionBy(run, DeploymentFailure, 'the link was followed and accepted');

describe("Hearth's reads of an app's package.json and Procfile", () => {
  it('a package.json that is a symbolic link to a host file: build_failed, nothing of the file in the reason or the log', async () => {
    const app = tmp();
    fs.symlinkSync(hostSecret(SECRET), path.join(app, 'package.json'));
    const log: string[] = [];
    const err = await failure(() => buildApp(app, NO_SANDBOX, {}, 10_000, (l) => log.push(l)));
    expect(err.message).toMatch(/^build_failed: package\.json is not a regular file/);
    expect(err.message).not.toContain(SECRET);
    expect(log.join('\n')).not.toContain(SECRET);
    expect((await failure(() => startCommand(app))).message).not.toContain(SECRET);
  });

  it("a Procfile that is a symbolic link to a host file holding a 'web:' line is not run", async () => {
    const app = tmp();
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ scripts: { start: 'node server.js' } }));
    fs.symlinkSync(hostSecret(`web: echo ${SECRET}\n`), path.join(app, 'Procfile'));
    const err = await failure(() => startCommand(app));
    expect(err.message).toMatch(/^build_failed: Procfile is not a regular file/);
    expect(err.message).not.toContain(SECRET);
  });

  it('a Procfile that is a fifo (the app made it) fails at once instead of blocking the thread that reads it', () => {
    const app = tmp();
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ scripts: { start: 'node server.js' } }));
    expect(spawnSync('mkfifo', [path.join(app, 'Procfile')]).status).toBe(0);
    // In a child process, bounded: before the fix, opening the fifo blocked forever.
    const script = `import { startCommand } from ${JSON.stringify(path.resolve('src/apps/deployment-builder.ts'))};
      try { console.log('started', startCommand(${JSON.stringify(app)})); } catch (err) { console.log('refused', err.message); }`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
      killSignal: 'SIGKILL',
    });
    expect(child.signal, `the read blocked: ${child.stderr}`).toBeNull();
    expect(child.stdout).toMatch(/^refused build_failed: Procfile is not a regular file/m);
  });

  it('a regular package.json and Procfile are read as before', () => {
    const app = tmp();
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ scripts: { start: 'node server.js' } }));
    expect(startCommand(app)).toBe('node server.js');
    fs.writeFileSync(path.join(app, 'Procfile'), 'web: node web.js\n');
    expect(startCommand(app)).toBe('node web.js');
  });
});
