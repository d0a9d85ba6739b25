import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { type NewProject, ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const temp = useTempStore('hearth-proj-');
let workspaces: WorkspaceRepository;
let projects: ProjectRepository;
let wsId: string;
const cipher = new ProviderKeyCipher(Buffer.alloc(32, 1));
const PROVIDER_KEY = 'prov-key-0123456789-WXYZ';

beforeEach(async () => {
  workspaces = new WorkspaceRepository(temp.store);
  projects = new ProjectRepository(temp.store, cipher);
  const ws = await workspaces.create('acct1', 'ws');
  await workspaces.requestYam('acct1', ws.id);
  await workspaces.finishYam(ws.id, { ok: true });
  wsId = ws.id;
});

const input = (over: Partial<NewProject> = {}): NewProject => ({
  accountId: 'acct1',
  workspaceId: wsId,
  name: 'bot',
  provider: 'anthropic',
  model: 'claude',
  temperature: 0.3,
  providerApiKey: PROVIDER_KEY,
  ...over,
});

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ApiError);
  return e as ApiError;
}

describe('ProjectRepository', () => {
  it('creates a provisioning project; stores the token hashed and the provider key encrypted', async () => {
    const { project, token } = await projects.create(input());
    expect(project).toMatchObject({
      workspaceId: wsId,
      accountId: 'acct1',
      state: 'provisioning',
      temperature: 0.3,
      providerKey: { last4: 'WXYZ' },
    });
    expect(project.id).toMatch(/^proj_[a-z0-9]{16}$/);
    expect(token).toMatch(new RegExp(`^hp_${project.tokenId}_.{32}$`));
    const raw = JSON.stringify(temp.store.dbs.projects.get(project.id));
    expect(raw).not.toContain(PROVIDER_KEY);
    expect(raw).not.toContain(token.split('_').slice(2).join('_'));
    expect(projects.providerKeyOf(project)).toBe(PROVIDER_KEY);
    expect(projects.pendingProvisioning()).toEqual([project.id]);
  });

  it("refuses a workspace that is missing, someone else's, or whose Yam is missing or not ready, writing nothing", async () => {
    expect((await rejection(projects.create(input({ workspaceId: 'ws_nosuch' })))).code).toBe('workspace_not_found');
    expect((await rejection(projects.create(input({ accountId: 'acct2' })))).code).toBe('workspace_not_found');
    const bare = await workspaces.create('acct1', 'bare');
    expect((await rejection(projects.create(input({ workspaceId: bare.id })))).code).toBe('no_yam_configured');
    await workspaces.requestYam('acct1', bare.id);
    expect((await rejection(projects.create(input({ workspaceId: bare.id })))).code).toBe('no_yam_configured');
    expect([...temp.store.dbs.projects.getRange()]).toEqual([]);
    expect([...temp.store.dbs.index.getRange({ start: ['project'], end: ['project-token\uffff'] })]).toEqual([]);
  });

  it('authenticates by the token id through the index; rotation kills the old token at once', async () => {
    const { project, token } = await projects.create(input());
    const second = await projects.create(input({ name: 'other' }));
    expect(projects.authenticate(token).id).toBe(project.id);
    expect(projects.authenticate(second.token).id).toBe(second.project.id);
    for (const bad of [
      undefined,
      '',
      'nope',
      `hk_${token.slice(3)}`,
      `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      `hp_zzzzzz_${token.split('_').slice(2).join('_')}`,
    ]) {
      expect(() => projects.authenticate(bad)).toThrow('Unauthorized');
    }
    const rotated = await projects.rotateToken('acct1', wsId, project.id);
    expect(rotated!.token).not.toBe(token);
    expect(rotated!.project.tokenId).not.toBe(project.tokenId);
    expect(() => projects.authenticate(token)).toThrow('Unauthorized');
    expect(projects.authenticate(rotated!.token).id).toBe(project.id);
    expect(await projects.rotateToken('acct2', wsId, project.id)).toBeUndefined();
  });

  it('lists, gets and updates only within the owning account and workspace', async () => {
    const { project } = await projects.create(input());
    await projects.create(input({ name: 'second' }));
    expect(projects.list('acct1', wsId).map((p) => p.name)).toEqual(['bot', 'second']);
    expect(projects.list('acct2', wsId)).toEqual([]);
    expect(projects.get('acct2', wsId, project.id)).toBeUndefined();
    expect(projects.get('acct1', 'ws_other', project.id)).toBeUndefined();
    expect(await projects.update('acct2', wsId, project.id, { name: 'x' })).toBeUndefined();

    const updated = await projects.update('acct1', wsId, project.id, {
      name: 'renamed',
      model: 'claude-2',
      temperature: null,
      providerApiKey: 'new-provider-key-ABCD',
    });
    expect(updated).toMatchObject({
      name: 'renamed',
      model: 'claude-2',
      temperature: null,
      providerKey: { last4: 'ABCD' },
    });
    expect(projects.providerKeyOf(updated!)).toBe('new-provider-key-ABCD');
  });

  it('transitions state only from the allowed states', async () => {
    const { project } = await projects.create(input());
    expect(await projects.transition(project.id, ['suspended'], 'ready')).toBeUndefined();
    expect(await projects.transition(project.id, ['provisioning'], 'ready')).toMatchObject({
      state: 'ready',
      stateReason: null,
    });
    expect(await projects.transition(project.id, ['ready'], 'suspended', 'paused by owner')).toMatchObject({
      state: 'suspended',
      stateReason: 'paused by owner',
    });
    expect(projects.pendingProvisioning()).toEqual([]);
  });

  it('deletes a project and its token', async () => {
    const { project, token } = await projects.create(input());
    expect(await projects.delete('acct2', wsId, project.id)).toBe(false);
    expect(await projects.delete('acct1', wsId, project.id)).toBe(true);
    expect(projects.getById(project.id)).toBeUndefined();
    expect(() => projects.authenticate(token)).toThrow('Unauthorized');
    expect(await projects.delete('acct1', wsId, project.id)).toBe(false);
  });

  it('reports an unreadable provider key as null (other master key)', async () => {
    const { project } = await projects.create(input());
    const otherKey = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 2)));
    expect(otherKey.providerKeyOf(project)).toBeNull();
    expect(projects.providerKeyOf({ ...project, providerKey: null })).toBeNull();
  });
});
