import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { isIgnored, parseIgnoreRules } from './ignore-rules.ts';
import { BLOCK, encodeHeader, encodePax, padding } from './tar-format.ts';

/**
 * Packs an app directory into a .tar.gz for `hearth apps deploy <dir>`: regular files, directories and
 * symbolic links (kept as links), paths relative to the directory. Excludes come from `.hearthignore` when
 * the directory has one, else from `.gitignore` (so build output a repository ignores can still be shipped
 * by listing it in .hearthignore); `node_modules` and `.git` are never packed. Returns the archive bytes and
 * what went in. Synchronous: a CLI step.
 */
export interface PackedArchive {
  archive: Buffer;
  files: string[];
}

export function ignoreFileOf(dir: string): string | null {
  for (const name of ['.hearthignore', '.gitignore']) if (fs.existsSync(path.join(dir, name))) return name;
  return null;
}

export function packDirectory(dir: string): PackedArchive {
  const root = path.resolve(dir);
  const ignoreFile = ignoreFileOf(root);
  const rules = ignoreFile ? parseIgnoreRules(fs.readFileSync(path.join(root, ignoreFile), 'utf8')) : [];
  const parts: Buffer[] = [];
  const files: string[] = [];
  const add = (
    rel: string,
    header: { mode: number; size: number; typeFlag: string; linkName?: string; mtime: number },
    body?: Buffer,
  ) => {
    const name = header.typeFlag === '5' ? `${rel}/` : rel;
    const long: Record<string, string> = {};
    if (Buffer.byteLength(name) > 99 || /[^\x20-\x7e]/.test(name)) long.path = name;
    if (
      header.linkName !== undefined &&
      (Buffer.byteLength(header.linkName) > 99 || /[^\x20-\x7e]/.test(header.linkName))
    )
      long.linkpath = header.linkName;
    if (Object.keys(long).length > 0) parts.push(encodePax(long));
    parts.push(
      encodeHeader({
        ...header,
        name: long.path ? name.slice(0, 99) : name,
        linkName: long.linkpath ? '' : header.linkName,
      }),
    );
    if (body) parts.push(body, Buffer.alloc(padding(body.length)));
  };
  const walk = (relDir: string) => {
    const entries = fs
      .readdirSync(path.join(root, relDir), { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const rel = relDir === '' ? e.name : `${relDir}/${e.name}`;
      const full = path.join(root, rel);
      const st = fs.lstatSync(full);
      if (isIgnored(rules, rel, st.isDirectory())) continue;
      const mtime = Math.floor(st.mtimeMs / 1000);
      if (st.isDirectory()) {
        add(rel, { mode: st.mode & 0o755, size: 0, typeFlag: '5', mtime });
        walk(rel);
      } else if (st.isSymbolicLink()) {
        add(rel, { mode: 0o777, size: 0, typeFlag: '2', linkName: fs.readlinkSync(full), mtime });
        files.push(rel);
      } else if (st.isFile()) {
        const body = fs.readFileSync(full);
        add(rel, { mode: st.mode & 0o755, size: body.length, typeFlag: '0', mtime }, body);
        files.push(rel);
      }
    }
  };
  walk('');
  parts.push(Buffer.alloc(BLOCK * 2));
  return { archive: gzipSync(Buffer.concat(parts)), files };
}
