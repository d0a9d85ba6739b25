/**
 * The tar record format (POSIX ustar with pax extended headers, and GNU long names when reading): 512-byte
 * headers, contents padded to 512 bytes, two zero blocks at the end. Pure functions over Buffers; the
 * unpacker (archive-unpacker.ts) and the CLI's packer (archive-packer.ts) share them.
 */
export const BLOCK = 512;

export type TarEntryType =
  | 'file'
  | 'directory'
  | 'symlink'
  | 'hardlink'
  | 'device'
  | 'fifo'
  | 'pax'
  | 'pax-global'
  | 'gnu-long-name'
  | 'gnu-long-link'
  | 'other';

export interface TarHeader {
  name: string;
  mode: number;
  size: number;
  type: TarEntryType;
  typeFlag: string;
  linkName: string;
}

function field(buf: Buffer, offset: number, length: number): string {
  const raw = buf.subarray(offset, offset + length);
  const nul = raw.indexOf(0);
  return raw.subarray(0, nul === -1 ? length : nul).toString('utf8');
}

function octal(buf: Buffer, offset: number, length: number): number {
  // GNU base-256 for big numbers: high bit of the first byte set.
  if ((buf[offset]! & 0x80) !== 0) {
    let n = buf[offset]! & 0x7f;
    for (let i = 1; i < length; i++) n = n * 256 + buf[offset + i]!;
    return n;
  }
  const text = field(buf, offset, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new Error(`bad number field '${text}'`);
  return parseInt(text, 8);
}

const TYPES: Record<string, TarEntryType> = {
  '0': 'file',
  '\0': 'file',
  '': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'device',
  '4': 'device',
  '5': 'directory',
  '6': 'fifo',
  x: 'pax',
  g: 'pax-global',
  L: 'gnu-long-name',
  K: 'gnu-long-link',
};

export function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

/** Parses one header block; throws when its checksum or fields are wrong (not a tar archive). */
export function parseHeader(block: Buffer): TarHeader {
  const stored = octal(block, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i]!;
  if (sum !== stored) throw new Error('header checksum mismatch');
  const magic = field(block, 257, 6);
  let name = field(block, 0, 100);
  if (magic === 'ustar') {
    const prefix = field(block, 345, 155);
    if (prefix) name = `${prefix}/${name}`;
  }
  const typeFlag = String.fromCharCode(block[156]!);
  return {
    name,
    mode: octal(block, 100, 8),
    size: octal(block, 124, 12),
    type: TYPES[typeFlag === '\0' ? '\0' : typeFlag] ?? 'other',
    typeFlag,
    linkName: field(block, 157, 100),
  };
}

/** The records of a pax extended header body (`<len> <key>=<value>\n` ...). */
export function parsePax(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let pos = 0;
  while (pos < body.length) {
    const space = body.indexOf(0x20, pos);
    if (space === -1) break;
    const len = Number(body.subarray(pos, space).toString('ascii'));
    if (!Number.isInteger(len) || len <= 0 || pos + len > body.length) throw new Error('bad pax record');
    const record = body.subarray(space + 1, pos + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    pos += len;
  }
  return out;
}

function writeString(buf: Buffer, offset: number, length: number, value: string): void {
  buf.write(value, offset, length, 'utf8');
}

function writeOctal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'ascii');
}

/** A ustar header block. `name` must fit in 100 bytes (the packer uses a pax header otherwise). */
export function encodeHeader(h: {
  name: string;
  mode: number;
  size: number;
  typeFlag: string;
  linkName?: string;
  mtime?: number;
}): Buffer {
  const buf = Buffer.alloc(BLOCK);
  writeString(buf, 0, 100, h.name);
  writeOctal(buf, 100, 8, h.mode);
  writeOctal(buf, 108, 8, 0);
  writeOctal(buf, 116, 8, 0);
  writeOctal(buf, 124, 12, h.size);
  writeOctal(buf, 136, 12, h.mtime ?? 0);
  buf.write('        ', 148, 8, 'ascii');
  buf.write(h.typeFlag, 156, 1, 'ascii');
  writeString(buf, 157, 100, h.linkName ?? '');
  buf.write('ustar\0', 257, 6, 'ascii');
  buf.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += buf[i]!;
  buf.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return buf;
}

/** A pax extended header (`x`) carrying long or non-ASCII `path` / `linkpath` values, with its padded body. */
export function encodePax(records: Record<string, string>): Buffer {
  let body = '';
  for (const [k, v] of Object.entries(records)) {
    const rest = ` ${k}=${v}\n`;
    let len = Buffer.byteLength(rest) + 1;
    while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
    body += `${len}${rest}`;
  }
  const bytes = Buffer.from(body, 'utf8');
  return Buffer.concat([
    encodeHeader({ name: 'PaxHeader', mode: 0o644, size: bytes.length, typeFlag: 'x' }),
    bytes,
    Buffer.alloc(padding(bytes.length)),
  ]);
}

export function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}
