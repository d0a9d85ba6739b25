import { beforeEach, describe, expect, it } from 'vitest';
import { AppRepository } from '../../../src/apps/app-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const temp = useTempStore('hearth-apps-store-');
let apps: AppRepository;
const cipher = new ProviderKeyCipher(Buffer.alloc(32, 7));
const input = {
  accountId: 'acct',
  workspaceId: 'ws_1',
  name: 'app',
  env: { SECRET_TOKEN: 'very-secret-value-123', MODE: 'blue' },
  apiKeyEnv: 'HEARTH_API_KEY',
  healthPath: '/health',
};

beforeEach(() => {
  apps = new AppRepository(temp.store, cipher);
});

describe('AppRepository', () => {
  it('stores env values and the app key encrypted, and gives them back only through envOf / apiKeyOf', async () => {
    const app = await apps.create('app_1', input, { id: 'k1', key: 'hk_k1_the-whole-key-secret' });
    const raw = JSON.stringify(temp.store.dbs.apps.get('app_1'));
    expect(raw).not.toContain('very-secret-value-123');
    expect(raw).not.toContain('the-whole-key-secret');
    expect(apps.envOf(app)).toEqual({ env: { SECRET_TOKEN: 'very-secret-value-123', MODE: 'blue' }, unreadable: [] });
    expect(apps.apiKeyOf(app)).toBe('hk_k1_the-whole-key-secret');
  });

  it('binds each envelope to its app and variable: moved elsewhere, it does not decrypt', async () => {
    const a = await apps.create('app_a', input, null);
    const b = await apps.create('app_b', { ...input, env: { OTHER: 'x' } }, null);
    const forged = { ...b, env: { OTHER: a.env.SECRET_TOKEN! } };
    expect(apps.envOf(forged)).toEqual({ env: {}, unreadable: ['OTHER'] });
    const renamed = { ...a, env: { MODE: a.env.SECRET_TOKEN! } };
    expect(apps.envOf(renamed).unreadable).toEqual(['MODE']);
  });

  it('sets and unsets variables, and deletes an app with its deployments', async () => {
    const app = await apps.create('app_1', input, null);
    const updated = (await apps.update(app.id, { env: { MODE: 'green', SECRET_TOKEN: null, NEW: 'n' } }))!;
    expect(apps.envOf(updated).env).toEqual({ MODE: 'green', NEW: 'n' });
    const d1 = await apps.createDeployment(updated, { kind: 'archive', bytes: 10 });
    const d2 = await apps.createDeployment(updated, { kind: 'release', from: d1.id, why: 'env' });
    expect(d2.codeFrom).toBe(d1.id);
    const d3 = await apps.createDeployment(updated, { kind: 'release', from: d2.id, why: 'rollback' });
    expect(d3.codeFrom).toBe(d1.id); // a release of a release runs the original build
    expect(apps.listDeployments(app.id).map((d) => d.id)).toEqual([d3.id, d2.id, d1.id]);
    expect(await apps.delete(app.id)).toBeDefined();
    expect(apps.getById(app.id)).toBeUndefined();
    expect(apps.getDeployment(app.id, d1.id)).toBeUndefined();
  });

  it('fails deployments a previous run left half-way', async () => {
    const app = await apps.create('app_1', input, null);
    const d = await apps.createDeployment(app, { kind: 'archive', bytes: 1 });
    await apps.setDeploymentState(d.id, 'building');
    expect(await apps.failInterrupted()).toBe(1);
    expect(apps.getDeployment(app.id, d.id)).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^build_failed: interrupted/),
    });
  });
});
