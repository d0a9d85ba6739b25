import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The master key that encrypts provider API keys at rest (32 bytes, AES-256). It comes from, in order:
 * 1. the setting `--secret-key` / `HEARTH_SECRET_KEY`: 64 hex characters or the base64 of 32 bytes;
 * 2. the key file `<dataDir>/master.key`: 64 hex characters and an optional newline, mode 0600,
 *    created on first use (atomically: safe when a server and a CLI start at the same moment).
 * A malformed setting, or a key file that is not a regular file, is readable by group/others, or has the
 * wrong size or content, is a MasterKeyError at boot whose message says how to fix it. No message ever
 * contains key material. Losing the key makes stored provider keys unreadable (provider_configuration_missing).
 */
export const MASTER_KEY_FILE = 'master.key';
export const MASTER_KEY_BYTES = 32;

export class MasterKeyError extends Error {
  override name = 'MasterKeyError';
}

export interface MasterKeyOptions {
  /** The `--secret-key` / HEARTH_SECRET_KEY value; wins over the key file when set. */
  secretKey?: string | undefined;
  /** The data dir holding (or to hold) `master.key`. */
  dataDir: string;
}

export interface MasterKey {
  key: Buffer;
  /** Where it came from: the setting, an existing key file, or a key file created just now. */
  source: 'setting' | 'file' | 'created';
  /** The key file, when one was used. */
  file?: string | undefined;
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** Decodes a key given as 64 hex characters or base64 (standard or url-safe) of 32 bytes; null otherwise. */
export function decodeMasterKey(text: string): Buffer | null {
  const t = text.trim();
  if (HEX_KEY.test(t)) return Buffer.from(t, 'hex');
  if (BASE64_KEY.test(t)) {
    const bytes = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === MASTER_KEY_BYTES) return bytes;
  }
  return null;
}

/** Loads (or creates) the master key. Throws MasterKeyError with a clear, secret-free message. */
export function loadMasterKey(o: MasterKeyOptions): MasterKey {
  if (o.secretKey !== undefined && o.secretKey !== '') {
    const key = decodeMasterKey(o.secretKey);
    if (!key)
      throw new MasterKeyError(
        '--secret-key / HEARTH_SECRET_KEY must be 64 hex characters or the base64 of 32 bytes (e.g. from `openssl rand -hex 32`)',
      );
    return { key, source: 'setting' };
  }
  const file = path.join(o.dataDir, MASTER_KEY_FILE);
  if (!fs.existsSync(file) && createKeyFile(o.dataDir, file))
    return { key: readKeyFile(file), source: 'created', file };
  return { key: readKeyFile(file), source: 'file', file };
}

/** Writes a fresh key to a private temp file and links it into place; false when another process won the race. */
function createKeyFile(dataDir: string, file: string): boolean {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(temporary, `${randomBytes(MASTER_KEY_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    fs.chmodSync(temporary, 0o600);
    const fd = fs.openSync(temporary, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.linkSync(temporary, file); // atomic; fails with EEXIST if someone else created it first
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new MasterKeyError(`cannot create the master key file ${file}: ${(err as Error).message}`);
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

function readKeyFile(file: string): Buffer {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch (err) {
    throw new MasterKeyError(`cannot read the master key file ${file}: ${(err as Error).message}`);
  }
  if (!stat.isFile()) throw new MasterKeyError(`the master key file ${file} is not a regular file`);
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new MasterKeyError(
      `the master key file ${file} has mode ${mode}: it must be readable by its owner only (chmod 600 ${file})`,
    );
  }
  if (stat.size !== 64 && stat.size !== 65) {
    throw new MasterKeyError(
      `the master key file ${file} has ${stat.size} bytes: expected 64 hex characters and an optional newline. Restore the original file (or set HEARTH_SECRET_KEY); a new key cannot read provider keys stored under the old one`,
    );
  }
  const text = fs.readFileSync(file, 'utf8');
  const key =
    HEX_KEY.test(text.trim()) && (text.length === 64 || text.endsWith('\n')) ? Buffer.from(text.trim(), 'hex') : null;
  if (!key)
    throw new MasterKeyError(
      `the master key file ${file} does not hold 64 hex characters. Restore the original file (or set HEARTH_SECRET_KEY)`,
    );
  return key;
}
