import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { BLOCK, isZeroBlock, padding, parseHeader, parsePax, type TarHeader } from './tar-format.ts';

/**
 * Unpacks a .tar.gz into an empty directory, refusing anything that could write or point outside it
 * (contract "invalid_archive"): absolute names, `..` components, symbolic links whose target is absolute
 * or resolves outside the root (read as text, and again once every entry is on disk, followed through
 * the other links the way the kernel follows them), hard links to anything but a regular file unpacked before from the same
 * archive, device files and fifos, more than `maxFiles` entries, more than `maxBytes` unpacked (file data,
 * data attached to any other entry, and extended header bodies all count, so no part of the tar stream is
 * unbounded), more than MAX_EXTENDED_RUN extended headers in front of one entry, an entry that collides
 * with an earlier one (a file where a directory is, ...), and input that is not gzip or not tar. Nothing
 * is ever written through a link: an entry whose path runs through (or lands on) a link unpacked before
 * is refused. Messages name entries, never the destination's path on disk. Modes keep only the permission bits (no setuid/setgid).
 * On failure the caller removes the directory; what was written stays inside it. An aborted `signal` stops it
 * between entries (its reason is thrown). Streams: memory use is
 * bounded by one read chunk, whatever the archive's size.
 */
export interface UnpackLimits {
  maxFiles: number;
  maxBytes: number;
}

export class ArchiveError extends Error {
  override name = 'ArchiveError';
}

const GZIP_MAGIC = [0x1f, 0x8b];
const WRITE_CHUNK = 64 * 1024;
/** pax `x` and `g`, GNU `L` and `K`: a real archive has at most one or two of them in front of an entry. */
const MAX_EXTENDED_RUN = 8;
/** The errno codes of an entry colliding with what an earlier entry made. */
const CONFLICT_CODES = new Set(['EEXIST', 'EISDIR', 'ENOTDIR', 'ELOOP', 'ENOTEMPTY']);

/** Pulls exact byte counts out of a stream of chunks. */
class ByteReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private done = false;
  constructor(private readonly source: AsyncIterator<Buffer>) {}

  /** Exactly `n` bytes, or fewer only at the end of the input. */
  async read(n: number): Promise<Buffer> {
    while (this.buffered < n && !this.done) {
      const next = await this.source.next();
      if (next.done) this.done = true;
      else {
        this.chunks.push(next.value);
        this.buffered += next.value.length;
      }
    }
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, Math.min(n, all.length));
    const rest = all.subarray(out.length);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}

/** The entry's path relative to the root, normalized, or an ArchiveError when it is unsafe. */
function safeRelative(name: string, what: string): string {
  if (name.includes('\0')) throw new ArchiveError(`${what} '${name}' contains a NUL byte`);
  if (name.startsWith('/') || /^[A-Za-z]:[\\/]/.test(name))
    throw new ArchiveError(`${what} '${name}' is an absolute path`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new ArchiveError(`${what} '${name}' escapes the archive root (..)`);
  return parts.join('/');
}

/**
 * Whether the symbolic link at `rel` (below `root`) resolves inside `root` when followed the way the kernel
 * follows it: each link's target read from the disk, a `..` after a link is the parent of where the link
 * led (so `a/b/u/..` with `a/b/u -> ../..` is root's parent, although it reads as inside). A component that
 * does not exist is taken as text from there on; a loop resolves to nothing (ELOOP), so it is inside.
 */
async function resolvesInside(root: string, rel: string): Promise<boolean> {
  const at: string[] = [];
  const todo = rel.split('/').reverse();
  let hops = 0;
  while (todo.length > 0) {
    const part = todo.pop()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (at.length === 0) return false;
      at.pop();
      continue;
    }
    at.push(part);
    let target: string;
    try {
      target = await fs.promises.readlink(path.join(root, ...at));
    } catch {
      continue; // not a link, or nothing there
    }
    if (++hops > 40) return true;
    if (target.startsWith('/')) return false;
    at.pop();
    todo.push(...target.split('/').reverse());
  }
  return true;
}

export async function unpackArchive(
  archive: Buffer | string,
  dest: string,
  limits: UnpackLimits,
  signal?: AbortSignal,
): Promise<{ files: number; bytes: number }> {
  const head = typeof archive === 'string' ? await readHead(archive) : archive.subarray(0, 2);
  if (head.length < 2 || head[0] !== GZIP_MAGIC[0] || head[1] !== GZIP_MAGIC[1])
    throw new ArchiveError('not a gzip file (expected a .tar.gz)');
  const input = typeof archive === 'string' ? fs.createReadStream(archive) : Readable.from([archive]);
  const gunzip = createGunzip();
  const stream = input.pipe(gunzip);
  input.on('error', (err: Error) => gunzip.destroy(err));
  const reader = new ByteReader(stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>);
  const root = path.resolve(dest);
  const links = new Set<string>();
  const symlinks = new Map<string, { name: string; linkName: string }>();
  const regularFiles = new Set<string>();
  let files = 0;
  let bytes = 0;
  let pax: Record<string, string> = {};
  let longName: string | null = null;
  let longLink: string | null = null;
  let extendedRun = 0;
  let sawEnd = false;
  const count = (n: number) => {
    bytes += n;
    if (bytes > limits.maxBytes) throw new ArchiveError(`unpacks to more than ${limits.maxBytes} bytes`);
  };
  /** Reads past `n` bytes of data nothing keeps, a chunk at a time. */
  const skip = async (n: number) => {
    for (let left = n; left > 0;) {
      const piece = await reader.read(Math.min(left, WRITE_CHUNK));
      if (piece.length === 0) throw new ArchiveError('truncated tar archive');
      left -= piece.length;
    }
  };
  try {
    for (;;) {
      signal?.throwIfAborted(); // between entries: the caller stops writing into `dest` (the app was deleted)
      const block = await reader.read(BLOCK);
      if (block.length === 0) break;
      if (block.length < BLOCK) throw new ArchiveError('truncated tar archive');
      if (isZeroBlock(block)) {
        sawEnd = true;
        break;
      }
      let header: TarHeader;
      try {
        header = parseHeader(block);
      } catch (err) {
        throw new ArchiveError(`not a tar archive (${(err as Error).message})`);
      }
      if (
        header.type === 'pax' ||
        header.type === 'pax-global' ||
        header.type === 'gnu-long-name' ||
        header.type === 'gnu-long-link'
      ) {
        if (header.size > 1 << 20) throw new ArchiveError('extended header too large');
        if (++extendedRun > MAX_EXTENDED_RUN)
          throw new ArchiveError(`more than ${MAX_EXTENDED_RUN} extended headers in front of one entry`);
        count(header.size);
        const body = await reader.read(header.size + padding(header.size));
        if (body.length < header.size) throw new ArchiveError('truncated tar archive');
        const content = body.subarray(0, header.size);
        if (header.type === 'pax') pax = parsePax(content);
        else if (header.type === 'gnu-long-name') longName = content.toString('utf8').replace(/\0+$/, '');
        else if (header.type === 'gnu-long-link') longLink = content.toString('utf8').replace(/\0+$/, '');
        continue;
      }
      const name = pax.path ?? longName ?? header.name;
      const linkName = pax.linkpath ?? longLink ?? header.linkName;
      const size = pax.size !== undefined ? Number(pax.size) : header.size;
      pax = {};
      longName = null;
      longLink = null;
      extendedRun = 0;

      const rel = safeRelative(name, 'entry');
      if (++files > limits.maxFiles) throw new ArchiveError(`more than ${limits.maxFiles} entries`);
      if (header.type === 'device' || header.type === 'fifo' || header.type === 'other')
        throw new ArchiveError(
          `entry '${name}' is a ${header.type === 'other' ? `special entry (type '${header.typeFlag}')` : header.type === 'fifo' ? 'fifo' : 'device file'}`,
        );
      if (rel === '') {
        if (header.type !== 'directory') throw new ArchiveError(`entry '${name}' has no name`);
        continue;
      }
      // Never write through (or over) a link unpacked earlier.
      const parts = rel.split('/');
      for (let i = 1; i <= parts.length; i++) {
        if (links.has(parts.slice(0, i).join('/')))
          throw new ArchiveError(`entry '${name}' runs through a link in the archive`);
      }
      const target = path.join(root, rel);
      const mode = header.mode & 0o777;
      try {
        switch (header.type) {
          case 'directory':
            await fs.promises.mkdir(target, { recursive: true, mode: (mode | 0o700) & 0o755 });
            break;
          case 'file': {
            if (!Number.isSafeInteger(size) || size < 0) throw new ArchiveError(`entry '${name}' has a bad size`);
            count(size);
            await fs.promises.mkdir(path.dirname(target), { recursive: true });
            const handle = await fs.promises.open(
              target,
              fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW,
              (mode | 0o600) & 0o755,
            );
            try {
              let left = size;
              while (left > 0) {
                const piece = await reader.read(Math.min(left, WRITE_CHUNK));
                if (piece.length === 0) throw new ArchiveError('truncated tar archive');
                await handle.write(piece);
                left -= piece.length;
              }
            } finally {
              await handle.close();
            }
            const pad = padding(size);
            if (pad > 0 && (await reader.read(pad)).length < pad) throw new ArchiveError('truncated tar archive');
            regularFiles.add(rel);
            break;
          }
          case 'symlink': {
            if (linkName === '' || linkName.startsWith('/'))
              throw new ArchiveError(`link '${name}' points outside the archive (${linkName || 'empty target'})`);
            const resolved = path.resolve(path.dirname(target), linkName);
            if (resolved !== root && !resolved.startsWith(root + path.sep))
              throw new ArchiveError(`link '${name}' points outside the archive (${linkName})`);
            await fs.promises.mkdir(path.dirname(target), { recursive: true });
            await fs.promises.symlink(linkName, target);
            links.add(rel);
            symlinks.set(rel, { name, linkName });
            break;
          }
          case 'hardlink': {
            let from: string;
            try {
              from = safeRelative(linkName, 'hard link target');
            } catch {
              throw new ArchiveError(`hard link '${name}' points outside the archive (${linkName})`);
            }
            if (!regularFiles.has(from))
              throw new ArchiveError(`hard link '${name}' points outside the archive (${linkName})`);
            await fs.promises.mkdir(path.dirname(target), { recursive: true });
            await fs.promises.link(path.join(root, from), target);
            links.add(rel);
            break;
          }
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== undefined && CONFLICT_CODES.has(code))
          throw new ArchiveError(`entry '${name}' conflicts with an earlier entry of the archive (${code})`);
        throw err;
      }
      if (header.type !== 'file' && size !== 0) {
        // Data attached to a directory or link entry: nothing keeps it, but it is read, so it counts.
        if (!Number.isSafeInteger(size) || size < 0) throw new ArchiveError(`entry '${name}' has a bad size`);
        count(size);
        await skip(size + padding(size));
      }
    }
  } catch (err) {
    stream.destroy();
    if (err instanceof ArchiveError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || code === 'ERR_INVALID_ARG_TYPE')
      throw new ArchiveError(`not a valid gzip stream (${(err as Error).message})`);
    throw err;
  }
  if (!sawEnd && files === 0) throw new ArchiveError('not a tar archive (empty)');
  for (const [rel, link] of symlinks) {
    if (!(await resolvesInside(root, rel)))
      throw new ArchiveError(`link '${link.name}' points outside the archive through another link (${link.linkName})`);
  }
  return { files, bytes };
}

async function readHead(file: string): Promise<Buffer> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await handle.read(buf, 0, 2, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
