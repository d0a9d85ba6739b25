import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SCRYPT_PARAMS,
  hashPassword,
  verifyAgainstNothing,
  verifyPassword,
} from '../../../src/accounts/password-hash.ts';

const FAST = { N: 2 ** 10, r: 8, p: 1 };

describe('password hashing (scrypt)', () => {
  it('uses memory-hard defaults and stores the parameters and a per-hash salt with the hash', async () => {
    expect(DEFAULT_SCRYPT_PARAMS.N).toBeGreaterThanOrEqual(2 ** 15);
    expect(DEFAULT_SCRYPT_PARAMS.r).toBe(8);
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(a).not.toBe(b); // a fresh salt each time
    expect(a).not.toContain('correct');
    expect(await verifyPassword('correct horse battery', a)).toBe(true);
    expect(await verifyPassword('correct horse batterY', a)).toBe(false);
  });

  it('verifies with the parameters stored in the hash, not the defaults', async () => {
    const h = await hashPassword('pässwörd', FAST);
    expect(h.startsWith('scrypt$1024$8$1$')).toBe(true);
    expect(await verifyPassword('pässwörd', h)).toBe(true);
    // NFC and NFD spellings of the same text are one password
    expect(await verifyPassword('pa\u0308sswo\u0308rd', h)).toBe(true);
    expect(await verifyPassword('', h)).toBe(false);
  });

  it('answers false, never throws, for malformed or hostile stored hashes', async () => {
    const good = await hashPassword('secret-pass', FAST);
    const [, , r, p, salt, hash] = good.split('$');
    for (const bad of [
      '',
      'scrypt',
      'bcrypt$1024$8$1$aa$bb',
      `scrypt$1000$${r}$${p}$${salt}$${hash}`,
      `scrypt$${2 ** 30}$${r}$${p}$${salt}$${hash}`,
      `scrypt$1024$0$${p}$${salt}$${hash}`,
      `scrypt$1024$${r}$${p}$$${hash}`,
      `scrypt$1024$${r}$${p}$${salt}$`,
    ]) {
      expect(await verifyPassword('secret-pass', bad)).toBe(false);
    }
    expect(await verifyPassword('x'.repeat(5000), good)).toBe(false);
  });

  it('spends a verification on an unknown user and answers false', async () => {
    expect(await verifyAgainstNothing('anything')).toBe(false);
  });
});
