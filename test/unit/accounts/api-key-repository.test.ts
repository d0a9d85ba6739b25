import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { secretPart } from '../../helpers/credentials.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const temp = useTempStore('hearth-keys-');
let keys: ApiKeyRepository;

beforeEach(() => {
  keys = new ApiKeyRepository(temp.store);
});

const expectUnauthorized = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).status).toBe(401);
    expect((e as ApiError).message).toBe('Unauthorized');
    return;
  }
  throw new Error('expected Unauthorized');
};

describe('ApiKeyRepository', () => {
  it('authenticates a created key and never stores or lists its secret', async () => {
    const created = await keys.create('ci', 'acct1');
    expect(keys.authenticate(created.key)).toEqual({
      keyId: created.id,
      accountId: 'acct1',
      limits: { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null, priority: 'interactive' },
    });
    const listed = keys.list('acct1');
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(secretPart(created.key));
    const raw = JSON.stringify(temp.store.dbs.apiKeys.get(created.id));
    expect(raw).not.toContain(secretPart(created.key));
  });

  it('rejects missing, malformed, unknown and tampered keys', async () => {
    const created = await keys.create('x');
    expectUnauthorized(() => keys.authenticate(undefined));
    expectUnauthorized(() => keys.authenticate('nope'));
    expectUnauthorized(() => keys.authenticate(created.key.slice(0, -1) + (created.key.endsWith('A') ? 'B' : 'A')));
    expectUnauthorized(() => keys.authenticate(created.key.replace(created.id, 'zzzzzzzzzzzz')));
  });

  it('revocation takes effect at once and is scoped to the account', async () => {
    const a = await keys.create('a', 'acct1');
    expect(await keys.revoke(a.id, 'acct2')).toBe(false);
    keys.authenticate(a.key);
    expect(await keys.revoke(a.id, 'acct1')).toBe(true);
    expectUnauthorized(() => keys.authenticate(a.key));
    expect(keys.list('acct1')[0]!.revokedAt).not.toBeNull();
    expect(await keys.revoke('missing')).toBe(false);
  });

  it('lists keys per account', async () => {
    await keys.create('a', 'acct1');
    await keys.create('b', 'acct2');
    await keys.create('c', 'acct1');
    expect(
      keys
        .list('acct1')
        .map((k) => k.name)
        .sort(),
    ).toEqual(['a', 'c']);
    expect(keys.list('acct2').map((k) => k.name)).toEqual(['b']);
  });

  it('sees keys written by another process-level handle on the same records', async () => {
    const other = await temp.another();
    try {
      const created = await new ApiKeyRepository(other).create('from-cli');
      // LMDB: at once; PostgreSQL (HEARTH_TEST_RECORDS=postgres): once this replica hears of it, within 1 s.
      for (let waited = 0; temp.store.dbs.apiKeys.get(created.id) === undefined && waited < 1_000; waited += 10)
        await new Promise((r) => setTimeout(r, 10));
      expect(keys.authenticate(created.key).keyId).toBe(created.id);
    } finally {
      await other.close();
    }
  });

  it('stores limits at creation, changes them by update (partial), and authenticate reads them fresh', async () => {
    const k = await keys.create('lim', 'acct1', { requestsPerMinute: 10, tokensPerMinute: null, maxConcurrent: 2 });
    expect(k.limits).toEqual({
      requestsPerMinute: 10,
      tokensPerMinute: null,
      maxConcurrent: 2,
      priority: 'interactive',
    });
    expect(keys.authenticate(k.key).limits).toEqual({
      requestsPerMinute: 10,
      tokensPerMinute: null,
      maxConcurrent: 2,
      priority: 'interactive',
    });
    expect(await keys.update(k.id, 'acct2', { limits: { maxConcurrent: 5 } })).toBeUndefined();
    const updated = await keys.update(k.id, 'acct1', {
      name: 'renamed',
      limits: { tokensPerMinute: 1000, requestsPerMinute: null },
    });
    expect(updated).toMatchObject({
      name: 'renamed',
      limits: { requestsPerMinute: null, tokensPerMinute: 1000, maxConcurrent: 2 },
    });
    expect(keys.authenticate(k.key).limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: 1000,
      maxConcurrent: 2,
      priority: 'interactive',
    });
    // Priority is one of the limits: set by update, kept by an update that does not name it, read fresh.
    expect((await keys.update(k.id, 'acct1', { limits: { priority: 'batch' } }))?.limits.priority).toBe('batch');
    expect(keys.authenticate(k.key).limits.priority).toBe('batch');
    expect((await keys.update(k.id, 'acct1', { limits: { maxConcurrent: 3 } }))?.limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: 1000,
      maxConcurrent: 3,
      priority: 'batch',
    });
    const batchKey = await keys.create('bulk', 'acct1', {
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'batch',
    });
    expect(keys.authenticate(batchKey.key).limits.priority).toBe('batch');
    expect(JSON.stringify(keys.list('acct1'))).not.toContain(k.key.slice(`hk_${k.id}_`.length));
  });
});
