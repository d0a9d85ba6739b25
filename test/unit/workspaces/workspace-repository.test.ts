import { beforeEach, describe, expect, it } from 'vitest';
import { indexKeys } from '../../../src/store/database.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const temp = useTempStore('hearth-ws-');
let workspaces: WorkspaceRepository;
let projects: ProjectRepository;

beforeEach(() => {
  workspaces = new WorkspaceRepository(temp.store);
  projects = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 1)));
});

async function readyWorkspace(accountId = 'acct1', name = 'ws') {
  const ws = await workspaces.create(accountId, name);
  await workspaces.requestYam(accountId, ws.id);
  await workspaces.finishYam(ws.id, { ok: true });
  return ws;
}

describe('WorkspaceRepository', () => {
  it('creates, lists per account and gets; another account sees nothing', async () => {
    const a = await workspaces.create('acct1', 'first');
    const b = await workspaces.create('acct1', 'second');
    await workspaces.create('acct2', 'theirs');
    expect(a.id).toMatch(/^ws_[a-z0-9]{16}$/);
    expect(workspaces.list('acct1').map((w) => w.name)).toEqual(['first', 'second']);
    expect(workspaces.list('acct2').map((w) => w.name)).toEqual(['theirs']);
    expect(workspaces.get('acct1', b.id)).toMatchObject({ id: b.id, name: 'second', yam: null });
    expect(workspaces.get('acct2', b.id)).toBeUndefined();
    expect(workspaces.get('acct1', 'ws_nosuch')).toBeUndefined();
    expect(temp.store.dbs.accounts.get('acct1')).toMatchObject({ id: 'acct1' });
  });

  it('creates a Yam once (idempotent PUT), finishes it, and retries a failed one', async () => {
    const ws = await workspaces.create('acct1', 'w');
    const first = await workspaces.requestYam('acct1', ws.id);
    expect(first).toMatchObject({ created: true, workspace: { yam: { state: 'creating', readyAt: null } } });
    expect(await workspaces.requestYam('acct1', ws.id)).toMatchObject({
      created: false,
      workspace: { yam: { state: 'creating' } },
    });
    expect(workspaces.pendingYams()).toEqual([ws.id]);
    await workspaces.finishYam(ws.id, { ok: false, error: 'no capacity' });
    expect(workspaces.get('acct1', ws.id)!.yam).toMatchObject({ state: 'failed', error: 'no capacity' });
    expect(await workspaces.requestYam('acct1', ws.id)).toMatchObject({
      created: true,
      workspace: { yam: { state: 'creating', error: null } },
    });
    const ready = await workspaces.finishYam(ws.id, { ok: true });
    expect(ready!.yam).toMatchObject({ state: 'ready' });
    expect(ready!.yam!.readyAt).not.toBeNull();
    // finishing again is a no-op; PUT on a ready Yam leaves it ready
    await workspaces.finishYam(ws.id, { ok: false, error: 'late' });
    expect(workspaces.get('acct1', ws.id)!.yam!.state).toBe('ready');
    expect(await workspaces.requestYam('acct1', ws.id)).toMatchObject({ created: false });
    expect(await workspaces.requestYam('acct2', ws.id)).toBeNull();
    expect(workspaces.pendingYams()).toEqual([]);
  });

  it('deletes a workspace with its projects and their token index entries in one go', async () => {
    const ws = await readyWorkspace();
    const other = await readyWorkspace('acct1', 'other');
    const made = [];
    for (const name of ['p1', 'p2'])
      made.push(
        await projects.create({
          accountId: 'acct1',
          workspaceId: ws.id,
          name,
          provider: 'openai',
          model: 'm',
          temperature: null,
          providerApiKey: 'k-123456',
        }),
      );
    const kept = await projects.create({
      accountId: 'acct1',
      workspaceId: other.id,
      name: 'kept',
      provider: 'openai',
      model: 'm',
      temperature: null,
      providerApiKey: 'k-123456',
    });

    expect(await workspaces.delete('acct2', ws.id)).toBeNull();
    expect(await workspaces.delete('acct1', ws.id)).toEqual({ projects: 2 });
    expect(workspaces.get('acct1', ws.id)).toBeUndefined();
    expect(workspaces.list('acct1').map((w) => w.id)).toEqual([other.id]);
    for (const { project, token } of made) {
      expect(projects.getById(project.id)).toBeUndefined();
      expect(temp.store.dbs.index.get(indexKeys.projectToken(project.tokenId, project.id))).toBeUndefined();
      expect(() => projects.authenticate(token)).toThrow('Unauthorized');
    }
    expect(projects.authenticate(kept.token).id).toBe(kept.project.id);
    expect(await workspaces.delete('acct1', ws.id)).toBeNull();
  });
});
