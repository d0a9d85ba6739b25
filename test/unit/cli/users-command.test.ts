import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** `hearth users create` reads the password from the terminal or, piped, from stdin; none given is said so. */
const BIN = path.resolve(import.meta.dirname, '../../../bin/hearth.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-users-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const create = (input: string, dataDir: string) =>
  spawnSync(
    process.execPath,
    [
      BIN,
      'users',
      'create',
      '--email',
      'ada@example.com',
      '--account',
      'default',
      '--role',
      'owner',
      '--data-dir',
      dataDir,
    ],
    { input, encoding: 'utf8' },
  );

describe('hearth users create', () => {
  it('with no password on stdin: exit 2, one line saying how to give one, and no store opened', () => {
    const dataDir = path.join(dir, 'none');
    const r = create('', dataDir);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^hearth users: no password given: type it when asked \(on a terminal\), or pipe it on stdin: printf '%s' "\$PASSWORD" \| npx hearth users create --email ada@example\.com --account default/,
    );
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('a password piped on stdin (one trailing newline dropped) creates the user', () => {
    const r = create('correct horse battery\n', path.join(dir, 'piped'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^created owner ada@example\.com \(id usr_\w+, account default\)/);
  });
});
