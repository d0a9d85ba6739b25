import { describe, expect, it } from 'vitest';
import { issueCredential, parseCredential, secretMatches, sha256Hex } from '../../../src/store/secrets.ts';

describe('credentials', () => {
  it('issues hk_<id>_<secret> with >= 128 random bits and stores only the hash', () => {
    const c = issueCredential('hk');
    expect(c.plaintext).toMatch(/^hk_[a-z0-9]{12}_[A-Za-z0-9_-]{32}$/);
    const parsed = parseCredential('hk', c.plaintext)!;
    expect(parsed.id).toBe(c.id);
    expect(Buffer.from(parsed.secret, 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    expect(c.secretHash).toBe(sha256Hex(parsed.secret));
    expect(c.secretHash).not.toContain(parsed.secret);
    expect(issueCredential('hk').plaintext).not.toBe(c.plaintext);
  });

  it('matches only the right secret', () => {
    const c = issueCredential('hp');
    const { secret } = parseCredential('hp', c.plaintext)!;
    expect(secretMatches(secret, c.secretHash)).toBe(true);
    expect(secretMatches(`${secret}x`, c.secretHash)).toBe(false);
    expect(secretMatches(secret, 'abcd')).toBe(false);
  });

  it('rejects malformed credentials and the wrong prefix', () => {
    const c = issueCredential('hk');
    for (const bad of [
      '',
      'hk_',
      'hk__secretsecretsecret',
      'hk_ID_secretsecretsecret',
      'hk_abc_short',
      c.plaintext.replace('hk_', 'hp_'),
    ]) {
      expect(parseCredential('hk', bad)).toBeNull();
    }
  });
});

describe('sortableId', () => {
  it('sorts in creation order, even within one millisecond', async () => {
    const { sortableId } = await import('../../../src/store/secrets.ts');
    const ids = Array.from({ length: 500 }, () => sortableId());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]{16}$/);
  });
});
