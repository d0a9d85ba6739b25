import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { packDirectory } from '../../src/apps/archive-packer.ts';
import { BLOCK, encodeHeader, padding } from '../../src/apps/tar-format.ts';

/** Archives and repositories of the probe test app (test/fixtures/apps/probe-app), and hand-made hostile archives. */
export const PROBE_APP_DIR = path.resolve(import.meta.dirname, '../fixtures/apps/probe-app');

/** A copy of the probe app with its config.json set, in a fresh temporary directory. */
export function probeAppCopy(config: { version: string; healthy: boolean }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-probe-app-'));
  for (const f of ['package.json', 'server.js']) fs.copyFileSync(path.join(PROBE_APP_DIR, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

/** The probe app packed the way `hearth apps deploy <dir>` packs it. */
export function probeAppArchive(config: { version: string; healthy: boolean }): Buffer {
  const dir = probeAppCopy(config);
  try {
    return packDirectory(dir).archive;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A new local bare git repository (a fresh temporary directory the caller removes) holding the files of `work` as
 * one commit on main, with `tag` on it when given. `work` becomes a git working tree; it is left where it is.
 */
export function bareRepositoryOf(work: string, tag?: string): string {
  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-test-repo-'));
  const git = (cwd: string, ...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args],
      { cwd, stdio: 'pipe' },
    );
  git(bare, 'init', '--quiet', '--bare');
  git(work, 'init', '--quiet');
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', 'test app');
  const refs = ['HEAD:refs/heads/main'];
  if (tag !== undefined) {
    git(work, 'tag', tag);
    refs.push(`refs/tags/${tag}`);
  }
  git(work, 'push', '--quiet', bare, ...refs);
  return bare;
}

/** A local bare git repository holding the probe app, with the given tag on its only commit. */
export function probeAppRepository(config: { version: string; healthy: boolean }, tag: string): string {
  const work = probeAppCopy(config);
  try {
    return bareRepositoryOf(work, tag);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export interface RawEntry {
  name: string;
  typeFlag: string;
  body?: Buffer;
  linkName?: string;
  mode?: number;
}

/** A .tar.gz of exactly these entries, nothing checked: for the invalid_archive cases. */
export function rawArchive(entries: RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const body = e.body ?? Buffer.alloc(0);
    parts.push(
      encodeHeader({
        name: e.name,
        mode: e.mode ?? 0o644,
        size: e.typeFlag === '0' ? body.length : 0,
        typeFlag: e.typeFlag,
        linkName: e.linkName ?? '',
      }),
    );
    if (e.typeFlag === '0') parts.push(body, Buffer.alloc(padding(body.length)));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return gzipSync(Buffer.concat(parts));
}

/** A .tar.gz of an app made of `packageJson` (as package.json) and `files` (name -> content), regular files only. */
export function appArchive(packageJson: object, files: Record<string, string | Buffer>): Buffer {
  return rawArchive([
    { name: 'package.json', typeFlag: '0', body: Buffer.from(JSON.stringify(packageJson)) },
    ...Object.entries(files).map(([name, body]) => ({ name, typeFlag: '0', body: Buffer.from(body) })),
  ]);
}
