import type { RawEntry } from './app-archives.ts';

/**
 * Named builders for rawArchive's entries (app-archives.ts), so a table of hostile archives reads as what each entry
 * is rather than as tar type flags: '0' a regular file, '1' a hard link, '2' a symbolic link, '5' a directory.
 */
export const tarFile = (name: string, body: string | Buffer): RawEntry => ({
  name,
  typeFlag: '0',
  body: typeof body === 'string' ? Buffer.from(body) : body,
});
export const tarHardLink = (name: string, linkName: string): RawEntry => ({ name, typeFlag: '1', linkName });
export const tarSymlink = (name: string, linkName: string): RawEntry => ({ name, typeFlag: '2', linkName });
export const tarDir = (name: string): RawEntry => ({ name, typeFlag: '5' });
