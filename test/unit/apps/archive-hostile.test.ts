import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ArchiveError, unpackArchive } from '../../../src/apps/archive-unpacker.ts';
import { BLOCK, encodeHeader, encodePax } from '../../../src/apps/tar-format.ts';
import { rawArchive } from '../../helpers/app-archives.ts';
import { tarDir, tarFile, tarHardLink, tarSymlink } from '../../helpers/unit-tar-entries.ts';
import { useTempDirs } from '../../helpers/temp-dirs.ts';
import { rejectionBy } from '../../helpers/unit-rejection.ts';

/**
 * Hostile archives the unpacker must refuse as invalid_archive (an ArchiveError, never another error that
 * the API would answer as a 500), within the unpacked-bytes limit whatever part of the tar stream holds
 * the bytes (file data, data attached to a directory entry, extended headers).
 */
const tmp = useTempDirs('hearth-archive-hostile-');
const LIMITS = { maxFiles: 100, maxBytes: 1 << 20 };

async function refusal(archive: Buffer, dest = tmp()): Promise<ArchiveError> {
  return rejectionBy(() => unpackArchive(archive, dest, LIMITS), ArchiveError, 'the archive was accepted');
}

describe('entries that collide with an earlier entry', () => {
  it('a directory then a file of the same name is invalid_archive, naming the entry, without Hearth paths', async () => {
    const dest = tmp();
    const err = await refusal(rawArchive([tarDir('a/'), tarFile('a', 'x')]), dest);
    expect(err.message).toContain("'a'");
    expect(err.message).not.toContain(dest);
  });

  it('a file then a file below it, a file then a directory, a hard link onto its own target: invalid_archive without Hearth paths', async () => {
    const cases = [
      rawArchive([tarFile('a', 'x'), tarFile('a/b', 'y')]),
      rawArchive([tarFile('a', 'x'), tarDir('a/')]),
      rawArchive([tarFile('a', 'x'), tarHardLink('a', 'a')]),
    ];
    for (const archive of cases) {
      const dest = tmp();
      expect((await refusal(archive, dest)).message).not.toContain(dest);
    }
  });
});

describe('symbolic links that point outside through other links', () => {
  // Each target stays inside when read as text (path.resolve), but `u` is the root itself, so `u/..` is its parent.
  const chains: Array<[string, () => Buffer]> = [
    [
      'a link through a link unpacked before it',
      () => rawArchive([tarDir('a/b/'), tarSymlink('a/b/u', '../..'), tarSymlink('esc', 'a/b/u/../..')]),
    ],
    [
      'a link through a link unpacked after it',
      () => rawArchive([tarDir('a/b/'), tarSymlink('esc', 'a/b/u/../..'), tarSymlink('a/b/u', '../..')]),
    ],
    [
      'a chain whose last link climbs out',
      () =>
        rawArchive([tarDir('a/b/'), tarSymlink('a/b/u', '../..'), tarSymlink('v', 'a/b/u/..'), tarSymlink('esc', 'v')]),
    ],
  ];

  it.each(chains)('%s is invalid_archive', async (_name, make) => {
    const dest = tmp();
    const err = await unpackArchive(make(), dest, LIMITS).then(
      () => null,
      (e: unknown) => e,
    );
    if (err === null) {
      // Accepted: show where it leads before failing.
      expect(
        path.relative(dest, fs.realpathSync.native(path.join(dest, 'esc'))),
        'esc resolves outside the root',
      ).not.toMatch(/^\.\./);
    }
    expect(err).toBeInstanceOf(ArchiveError);
  });

  it('links to links inside, a loop of links and a dangling link inside are accepted (only an escape is refused)', async () => {
    const dest = tmp();
    await unpackArchive(
      rawArchive([
        tarFile('lib/x.js', 'x'),
        tarDir('bin/'),
        tarSymlink('cur', 'lib'),
        tarSymlink('bin/x', '../cur/x.js'),
        tarSymlink('loop1', 'loop2'),
        tarSymlink('loop2', 'loop1'),
        tarSymlink('later', 'not/there/yet'),
      ]),
      dest,
      LIMITS,
    );
    expect(fs.readFileSync(path.join(dest, 'bin/x'), 'utf8')).toBe('x');
  });
});

describe('bytes beyond the unpacked limit', () => {
  it('data attached to a directory entry counts: a 16 MiB one (a 16 KB gzip) is refused', async () => {
    const size = 16 << 20;
    const archive = gzipSync(
      Buffer.concat([
        encodeHeader({ name: 'd/', mode: 0o755, size, typeFlag: '5' }),
        Buffer.alloc(size),
        Buffer.alloc(BLOCK * 2),
      ]),
    );
    expect(archive.length).toBeLessThan(LIMITS.maxBytes);
    expect((await refusal(archive)).message).toMatch(/more than 1048576 bytes/);
  });

  it('extended headers count: 4 MiB of pax headers in front of one small file is refused', async () => {
    const pax = encodePax({ comment: 'x'.repeat(1000) });
    const flood = Buffer.concat(Array.from({ length: Math.ceil((4 << 20) / pax.length) }, () => pax));
    const archive = gzipSync(
      Buffer.concat([
        flood,
        encodeHeader({ name: 'a.txt', mode: 0o644, size: 0, typeFlag: '0' }),
        Buffer.alloc(BLOCK * 2),
      ]),
    );
    await refusal(archive);
  });

  it('64 empty extended headers in front of one entry are refused, however few bytes they hold', async () => {
    const empty = encodeHeader({ name: 'PaxHeader', mode: 0o644, size: 0, typeFlag: 'x' });
    const archive = gzipSync(
      Buffer.concat([
        ...Array.from({ length: 64 }, () => empty),
        encodeHeader({ name: 'a.txt', mode: 0o644, size: 0, typeFlag: '0' }),
        Buffer.alloc(BLOCK * 2),
      ]),
    );
    expect((await refusal(archive)).message).toMatch(/extended headers/);
  });

  it('still accepts a long name in a pax header and a GNU long name, and a directory right at the limits', async () => {
    const dest = tmp();
    const long = `${'d/'.repeat(80)}f.txt`;
    const gnuName = Buffer.from(`${'g/'.repeat(80)}g.txt\0`);
    const archive = gzipSync(
      Buffer.concat([
        encodePax({ path: long }),
        encodeHeader({ name: 'ignored', mode: 0o644, size: 1, typeFlag: '0' }),
        Buffer.from('L'),
        Buffer.alloc(BLOCK - 1),
        encodeHeader({ name: '././@LongLink', mode: 0o644, size: gnuName.length, typeFlag: 'L' }),
        gnuName,
        Buffer.alloc(BLOCK - gnuName.length),
        encodeHeader({ name: 'ignored', mode: 0o644, size: 1, typeFlag: '0' }),
        Buffer.from('G'),
        Buffer.alloc(BLOCK - 1),
        Buffer.alloc(BLOCK * 2),
      ]),
    );
    await unpackArchive(archive, dest, LIMITS);
    expect(fs.readFileSync(path.join(dest, long), 'utf8')).toBe('L');
    expect(fs.readFileSync(path.join(dest, `${'g/'.repeat(80)}g.txt`), 'utf8')).toBe('G');
  });
});
