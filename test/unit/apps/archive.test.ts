import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packDirectory } from '../../../src/apps/archive-packer.ts';
import { ArchiveError, unpackArchive } from '../../../src/apps/archive-unpacker.ts';
import { rawArchive } from '../../helpers/app-archives.ts';
import { tarDir, tarFile, tarHardLink, tarSymlink } from '../../helpers/unit-tar-entries.ts';
import { useTempDirs } from '../../helpers/temp-dirs.ts';

const tmp = useTempDirs('hearth-archive-');
const LIMITS = { maxFiles: 100, maxBytes: 1 << 20 };

describe('packing a directory and unpacking it safely', () => {
  it('round-trips files, modes, nested and long names and inner links; leaves out excluded paths', async () => {
    const src = tmp();
    const long = `${'deep/'.repeat(30)}file-with-a-long-name.txt`;
    fs.mkdirSync(path.join(src, path.dirname(long)), { recursive: true });
    fs.writeFileSync(path.join(src, long), 'deep');
    fs.writeFileSync(path.join(src, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(path.join(src, 'ünïcode.txt'), 'u');
    fs.symlinkSync('run.sh', path.join(src, 'link.sh'));
    fs.mkdirSync(path.join(src, 'node_modules/x'), { recursive: true });
    fs.writeFileSync(path.join(src, 'node_modules/x/index.js'), '');
    fs.writeFileSync(path.join(src, 'debug.log'), 'x');
    fs.writeFileSync(path.join(src, '.hearthignore'), '*.log\n');
    const { archive, files } = packDirectory(src);
    expect(files).not.toContain('debug.log');
    expect(files.some((f) => f.startsWith('node_modules'))).toBe(false);

    const dest = tmp();
    const r = await unpackArchive(archive, dest, LIMITS);
    expect(r.files).toBeGreaterThan(4);
    expect(fs.readFileSync(path.join(dest, long), 'utf8')).toBe('deep');
    expect(fs.statSync(path.join(dest, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(fs.readFileSync(path.join(dest, 'ünïcode.txt'), 'utf8')).toBe('u');
    expect(fs.readlinkSync(path.join(dest, 'link.sh'))).toBe('run.sh');
    expect(fs.existsSync(path.join(dest, 'node_modules'))).toBe(false);
    expect(fs.existsSync(path.join(dest, 'debug.log'))).toBe(false);
  });

  it('never writes through a link unpacked before, even one pointing inside', async () => {
    const dest = tmp();
    const archive = rawArchive([tarDir('sub/'), tarSymlink('alias', 'sub'), tarFile('alias/file', 'x')]);
    await expect(unpackArchive(archive, dest, LIMITS)).rejects.toThrow(ArchiveError);
    expect(fs.existsSync(path.join(dest, 'sub/file'))).toBe(false);
  });

  it('drops setuid bits and accepts a hard link to a file of the same archive', async () => {
    const dest = tmp();
    const archive = rawArchive([{ ...tarFile('tool', 'x'), mode: 0o4755 }, tarHardLink('tool2', 'tool')]);
    await unpackArchive(archive, dest, LIMITS);
    expect(fs.statSync(path.join(dest, 'tool')).mode & 0o7777).toBe(0o755);
    expect(fs.statSync(path.join(dest, 'tool2')).ino).toBe(fs.statSync(path.join(dest, 'tool')).ino);
  });

  it('refuses a truncated archive', async () => {
    const whole = rawArchive([tarFile('a.txt', Buffer.alloc(5000, 'a'))]);
    await expect(unpackArchive(whole.subarray(0, whole.length - 20), tmp(), LIMITS)).rejects.toThrow(ArchiveError);
  });
});
