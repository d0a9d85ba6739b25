import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as deployment from '../../../src/apps/deployment-builder.ts';

describe('deployment builder helpers', () => {
  it('masks URL credentials wherever they appear', () => {
    expect(deployment.maskUrlCredentials('clone https://bob:ghp_secret@github.com/x/y.git failed')).toBe(
      'clone https://***@github.com/x/y.git failed',
    );
    expect(deployment.maskUrlCredentials('ssh://git@host/repo and file:///tmp/repo')).toBe(
      'ssh://***@host/repo and file:///tmp/repo',
    );
  });

  it('refuses repository "URLs" that are options or command transports', () => {
    const refused = ['--upload-pack=touch /tmp/x', 'ext::sh -c touch% /tmp/x', 'fd::3', 'a\nb', ''];
    const accepted = ['https://github.com/a/b.git', 'file:///srv/repo.git', '/srv/repo.git', 'git@github.com:a/b.git'];
    for (const bad of refused) expect(deployment.isAcceptableRepositoryUrl(bad), bad).toBe(false);
    for (const good of accepted) expect(deployment.isAcceptableRepositoryUrl(good), good).toBe(true);
  });

  it('starts the Procfile web line, else the start script, else fails saying what to add', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-start-'));
    try {
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'node a.js' } }));
      expect(deployment.startCommand(dir)).toBe('node a.js');
      fs.writeFileSync(path.join(dir, 'Procfile'), 'worker: node w.js\nweb: node web.js --port $PORT\n');
      expect(deployment.startCommand(dir)).toBe('node web.js --port $PORT');
      fs.rmSync(path.join(dir, 'Procfile'));
      fs.writeFileSync(path.join(dir, 'package.json'), '{}');
      expect(() => deployment.startCommand(dir)).toThrow(deployment.DeploymentFailure);
      expect(() => deployment.startCommand(dir)).toThrow(/^build_failed: no start command/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
