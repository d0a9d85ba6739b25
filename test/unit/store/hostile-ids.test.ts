import { beforeEach, describe, expect, it, vi } from 'vitest';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * Ids and credentials a client controls never reach LMDB over its key-size limit (defect 2), the parser
 * splits a credential at the FIRST `_` after the prefix (defect 11), and a well-formed credential with an
 * unknown id does the same work as a known id with a wrong secret: one hash + constant-time compare
 * (defect 10; counted, not timed).
 */
const secrets = await vi.hoisted(async () => ({ calls: 0 }));
vi.mock('../../../src/store/secrets.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/store/secrets.ts')>();
  return {
    ...real,
    secretMatches: (secret: string, hash: string) => {
      secrets.calls++;
      return real.secretMatches(secret, hash);
    },
  };
});

const { ApiKeyRepository } = await import('../../../src/accounts/api-key-repository.ts');
const { HearthStore, keyFits, MAX_KEY_BYTES } = await import('../../../src/store/database.ts');
const { ProjectRepository } = await import('../../../src/workspaces/project-repository.ts');
const { ProviderKeyCipher } = await import('../../../src/workspaces/provider-key-cipher.ts');
const { WorkspaceRepository } = await import('../../../src/workspaces/workspace-repository.ts');
const { parseCredential, issueCredential } = await import('../../../src/store/secrets.ts');

const temp = useTempStore('hearth-hostile-ids-');
let keys: InstanceType<typeof ApiKeyRepository>;
let workspaces: InstanceType<typeof WorkspaceRepository>;
let projects: InstanceType<typeof ProjectRepository>;

beforeEach(() => {
  keys = new ApiKeyRepository(temp.store);
  workspaces = new WorkspaceRepository(temp.store);
  projects = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 1)));
  secrets.calls = 0;
});

const long = (n: number) => 'a'.repeat(n);

describe('over-long ids and credentials', () => {
  it('a 4,100-char key id is Unauthorized, not an LMDB error', () => {
    expect(() => keys.authenticate(`hk_${long(4100)}_${long(32)}`)).toThrow('Unauthorized');
    expect(() => keys.authenticate(`hk_abc_${long(5000)}`)).toThrow('Unauthorized');
    expect(() => projects.authenticate(`hp_${long(2000)}_${long(32)}`)).toThrow('Unauthorized');
  });

  it('repository reads and writes with 4,100-char ids find nothing and change nothing', async () => {
    const id = long(4100);
    expect(keys.get(id)).toBeUndefined();
    expect(await keys.revoke(id, 'acct')).toBe(false);
    expect(workspaces.get('acct', id)).toBeUndefined();
    expect(await workspaces.delete('acct', id)).toBeNull();
    expect(await workspaces.requestYam('acct', id)).toBeNull();
    expect(projects.get('acct', id, id)).toBeUndefined();
    expect(projects.list('acct', id)).toEqual([]);
    expect(await projects.update('acct', id, id, { name: 'x' })).toBeUndefined();
    expect(await projects.delete('acct', id, id)).toBe(false);
    expect(await projects.rotateToken('acct', id, id)).toBeUndefined();
    // multi-byte characters count in bytes
    expect(keyFits('é'.repeat(MAX_KEY_BYTES / 2))).toBe(true);
    expect(keyFits('é'.repeat(MAX_KEY_BYTES / 2 + 1))).toBe(false);
    expect(keyFits(['project', long(MAX_KEY_BYTES)])).toBe(false);
  });
});

describe('parseCredential', () => {
  it('takes the id up to the first _ and keeps every _ of the secret', () => {
    expect(parseCredential('hk', 'hk_abc123_se_cr_et_0123456789abcdef')).toEqual({
      id: 'abc123',
      secret: 'se_cr_et_0123456789abcdef',
    });
    expect(parseCredential('hk', 'hk_abc123__leading_underscore_secret')).toEqual({
      id: 'abc123',
      secret: '_leading_underscore_secret',
    });
    for (let i = 0; i < 200; i++) {
      const issued = issueCredential('hp');
      expect(parseCredential('hp', issued.plaintext)?.id).toBe(issued.id);
    }
    expect(parseCredential('hk', `hk_${long(65)}_${long(32)}`)).toBeNull();
    expect(parseCredential('hk', `hk_abc_${long(257)}`)).toBeNull();
  });
});

describe('unknown id vs known id with a wrong secret', () => {
  it('API keys: both paths hash and compare exactly once', async () => {
    const created = await keys.create('ci', 'acct1');
    const wrongSecret = `hk_${created.id}_${'x'.repeat(32)}`;
    const unknownId = `hk_zzzzzzzzzzzz_${'x'.repeat(32)}`;
    secrets.calls = 0;
    expect(() => keys.authenticate(wrongSecret)).toThrow('Unauthorized');
    expect(secrets.calls).toBe(1);
    secrets.calls = 0;
    expect(() => keys.authenticate(unknownId)).toThrow('Unauthorized');
    expect(secrets.calls).toBe(1);
  });

  it('project tokens: both paths hash and compare exactly once', async () => {
    const ws = await workspaces.create('acct1', 'ws');
    await workspaces.requestYam('acct1', ws.id);
    await workspaces.finishYam(ws.id, { ok: true });
    const { project } = await projects.create({
      accountId: 'acct1',
      workspaceId: ws.id,
      name: 'p',
      provider: 'openai',
      model: 'm',
      temperature: null,
      providerApiKey: 'sk-abcdWXYZ',
    });
    secrets.calls = 0;
    expect(() => projects.authenticate(`hp_${project.tokenId}_${'x'.repeat(32)}`)).toThrow('Unauthorized');
    expect(secrets.calls).toBe(1);
    secrets.calls = 0;
    expect(() => projects.authenticate(`hp_zzzzzzzzzzzz_${'x'.repeat(32)}`)).toThrow('Unauthorized');
    expect(secrets.calls).toBe(1);
  });
});
