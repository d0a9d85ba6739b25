import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeMasterKey, loadMasterKey, MASTER_KEY_FILE, MasterKeyError } from '../../../src/store/master-key.ts';
import { lastFour, ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { thrownBy } from '../../helpers/thrown.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-mk-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const HEX = 'ab'.repeat(32);
const errorOf = (fn: () => unknown) => thrownBy(fn, MasterKeyError);

describe('master key', () => {
  it('decodes 64 hex characters and base64 (standard and url-safe) of 32 bytes, nothing else', () => {
    const bytes = Buffer.from(HEX, 'hex');
    expect(decodeMasterKey(HEX)).toEqual(bytes);
    expect(decodeMasterKey(bytes.toString('base64'))).toEqual(bytes);
    expect(decodeMasterKey(bytes.toString('base64url'))).toEqual(bytes);
    for (const bad of ['', 'ab'.repeat(31), 'zz'.repeat(32), Buffer.alloc(31).toString('base64'), 'not a key'])
      expect(decodeMasterKey(bad)).toBeNull();
  });

  it('uses the setting when given, and rejects a malformed one without echoing it', () => {
    expect(loadMasterKey({ secretKey: HEX, dataDir: dir })).toMatchObject({
      source: 'setting',
      key: Buffer.from(HEX, 'hex'),
    });
    expect(fs.existsSync(path.join(dir, MASTER_KEY_FILE))).toBe(false);
    const e = errorOf(() => loadMasterKey({ secretKey: 'secret-but-short', dataDir: dir }));
    expect(e.message).toContain('HEARTH_SECRET_KEY');
    expect(e.message).not.toContain('secret-but-short');
  });

  it('creates a 0600 key file on first use and reads the same key back', () => {
    const first = loadMasterKey({ dataDir: path.join(dir, 'new-data') });
    expect(first.source).toBe('created');
    const file = path.join(dir, 'new-data', MASTER_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    const second = loadMasterKey({ dataDir: path.join(dir, 'new-data') });
    expect(second.source).toBe('file');
    expect(second.key).toEqual(first.key);
    expect(fs.readdirSync(path.join(dir, 'new-data'))).toEqual([MASTER_KEY_FILE]);
  });

  it('refuses a key file readable by others, of the wrong size or content, or not a file', () => {
    const file = path.join(dir, MASTER_KEY_FILE);
    fs.writeFileSync(file, `${HEX}\n`, { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    expect(errorOf(() => loadMasterKey({ dataDir: dir })).message).toMatch(/mode 0644.*chmod 600/);
    fs.chmodSync(file, 0o600);
    expect(loadMasterKey({ dataDir: dir }).key).toEqual(Buffer.from(HEX, 'hex'));
    fs.writeFileSync(file, HEX.slice(0, 40));
    expect(errorOf(() => loadMasterKey({ dataDir: dir })).message).toMatch(/has 40 bytes/);
    fs.writeFileSync(file, 'g'.repeat(64));
    expect(errorOf(() => loadMasterKey({ dataDir: dir })).message).toMatch(/does not hold 64 hex/);
    fs.rmSync(file);
    fs.mkdirSync(file);
    expect(errorOf(() => loadMasterKey({ dataDir: dir })).message).toMatch(/not a regular file/);
  });
});

describe('ProviderKeyCipher', () => {
  const cipher = new ProviderKeyCipher(Buffer.from(HEX, 'hex'));

  it('round-trips, never stores the plaintext, and uses a fresh IV each time', () => {
    const a = cipher.encrypt('sk-provider-secret-1234', 'project:p1');
    const b = cipher.encrypt('sk-provider-secret-1234', 'project:p1');
    expect(a.last4).toBe('1234');
    expect(JSON.stringify(a)).not.toContain('provider-secret');
    expect(a.iv).not.toBe(b.iv);
    expect(a.data).not.toBe(b.data);
    expect(cipher.decrypt(a, 'project:p1')).toBe('sk-provider-secret-1234');
  });

  it('returns null for another master key, another context, tampering and malformed envelopes', () => {
    const env = cipher.encrypt('sk-provider-secret-1234', 'project:p1');
    expect(new ProviderKeyCipher(Buffer.alloc(32, 7)).decrypt(env, 'project:p1')).toBeNull();
    expect(cipher.decrypt(env, 'project:p2')).toBeNull();
    const data = Buffer.from(env.data, 'base64');
    data[0]! ^= 1;
    expect(cipher.decrypt({ ...env, data: data.toString('base64') }, 'project:p1')).toBeNull();
    expect(cipher.decrypt({ ...env, iv: 'AAAA' }, 'project:p1')).toBeNull();
    expect(cipher.decrypt(null, 'project:p1')).toBeNull();
  });

  it('shows at most the last four characters', () => {
    expect(lastFour('abcdefgh')).toBe('efgh');
    expect(lastFour('abc')).toBe('***');
    expect(() => new ProviderKeyCipher(Buffer.alloc(16))).toThrow(/32 bytes/);
  });
});
