import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyService } from '../../../src/accounts/key-service.ts';
import { WorkspaceService } from '../../../src/workspaces/workspace-service.ts';
import { Provisioner } from '../../../src/workspaces/provisioner.ts';
import { silentLogger } from '../../../src/log/logger.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * Records stay consistent when the same project, workspace or key list is changed by many requests at
 * once (each change is one LMDB write transaction that reads the record it changes): after 20 parallel
 * rotations exactly one token works; a delete racing rotations, suspensions or project creations leaves
 * no record, no index entry and no working token behind; parallel suspend/resume ends in the state of the
 * last change; a Yam is started once and a workspace deleted once; parallel key creations are all listed
 * and all work. Runs on the real LMDB temp.store.
 */
const ACCOUNT = 'acct-race';
const temp = useTempStore('hearth-mgmt-race-');
let keys: ApiKeyRepository;
let projects: ProjectRepository;
let provisioner: Provisioner;
let management: WorkspaceService;
let keyService: KeyService;

beforeEach(() => {
  const workspaces = new WorkspaceRepository(temp.store);
  keys = new ApiKeyRepository(temp.store);
  projects = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 3)));
  provisioner = new Provisioner(workspaces, projects, silentLogger, { delayMs: 0 });
  management = new WorkspaceService({ workspaces, projects, provisioner, baseUrl: () => 'http://127.0.0.1:1' });
  keyService = new KeyService(keys);
});
afterEach(async () => {
  provisioner.dispose();
});

async function readyWorkspace(): Promise<string> {
  const ws = await management.createWorkspace(ACCOUNT, { name: 'race' });
  await management.putYam(ACCOUNT, ws.workspaceId);
  await provisioner.settle();
  return ws.workspaceId;
}

const newProject = (ws: string, name = 'bot') =>
  management.createProject(ACCOUNT, ws, {
    name,
    provider: 'openai',
    model: 'gpt-4o-mini',
    providerApiKey: 'sk-race-0123456789',
  });

/** Whether `token` authenticates as project `id`. */
function tokenWorks(token: string, id: string): boolean {
  try {
    return projects.authenticate(token).id === id;
  } catch {
    return false;
  }
}

/** Index entries of one kind, as [kind, owner, record] keys. */
const indexEntries = (kind: string) =>
  [...temp.store.dbs.index.getKeys({ start: [kind], end: [kind, '\uffff'] })].map((k) => k.map(String));

async function settled<T>(
  all: Array<Promise<T>>,
): Promise<Array<{ ok: true; value: T } | { ok: false; status: number; code: string }>> {
  return Promise.all(
    all.map((p) =>
      p.then(
        (value) => ({ ok: true as const, value }),
        (e: { status: number; code: string }) => ({ ok: false as const, status: e.status, code: e.code }),
      ),
    ),
  );
}

describe('concurrent changes to one project', () => {
  it('20 rotations at once: all answered, exactly the last committed token works, one token index entry', async () => {
    const ws = await readyWorkspace();
    const p = await newProject(ws);
    const rotated = await Promise.all(
      Array.from({ length: 20 }, () => management.rotateToken(ACCOUNT, ws, p.projectId)),
    );
    const working = [p.token, ...rotated.map((r) => r.token)].filter((t) => tokenWorks(t, p.projectId));
    expect(working).toHaveLength(1);
    const record = projects.getById(p.projectId)!;
    expect(working[0]).toContain(`hp_${record.tokenId}_`);
    expect(indexEntries('project-token').filter((k) => k[2] === p.projectId)).toEqual([
      ['project-token', record.tokenId, p.projectId],
    ]);
  });

  it('a delete racing rotations and suspensions: one delete wins, the rest are 404, no token or index entry is left', async () => {
    const ws = await readyWorkspace();
    const p = await newProject(ws);
    await provisioner.settle();
    const ops = Array.from({ length: 21 }, (_, i) => {
      if (i % 7 === 3) return management.deleteProject(ACCOUNT, ws, p.projectId);
      if (i % 2 === 0) return management.rotateToken(ACCOUNT, ws, p.projectId);
      return management.updateProject(ACCOUNT, ws, p.projectId, { state: i % 4 === 1 ? 'suspended' : 'ready' });
    });
    const results = await settled<unknown>(ops);
    const deletes = results.filter((_, i) => i % 7 === 3);
    expect(deletes.filter((r) => r.ok)).toHaveLength(1);
    for (const r of results) if (!r.ok) expect(r).toMatchObject({ status: 404, code: 'project_not_found' });
    await provisioner.settle();
    const tokens = [
      p.token,
      ...results.flatMap((r) =>
        r.ok && typeof r.value === 'object' && r.value !== null && 'token' in r.value ? [String(r.value.token)] : [],
      ),
    ];
    expect(tokens.filter((t) => tokenWorks(t, p.projectId))).toEqual([]);
    expect(projects.getById(p.projectId)).toBeUndefined();
    expect(management.listProjects(ACCOUNT, ws).data).toEqual([]);
    expect(indexEntries('project-token')).toEqual([]);
    expect(indexEntries('project')).toEqual([]);
  });

  it('suspend and resume sent at once: every answer is a whole project, the end state is that of the last change', async () => {
    const ws = await readyWorkspace();
    const p = await newProject(ws);
    await provisioner.settle();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        management.updateProject(ACCOUNT, ws, p.projectId, {
          state: i % 2 === 0 ? 'suspended' : 'ready',
          name: `n${i}`,
        }),
      ),
    );
    for (const a of answers) expect(['suspended', 'provisioning', 'ready']).toContain(a.state);
    await provisioner.settle();
    const now = management.getProject(ACCOUNT, ws, p.projectId);
    expect(now.name).toBe(answers.at(-1)!.name); // transactions commit in the order they were asked for
    expect(now.state).toBe(answers.at(-1)!.state === 'suspended' ? 'suspended' : 'ready');
    expect(tokenWorks(p.token, p.projectId)).toBe(true);
  });
});

describe('concurrent changes to a workspace and to keys', () => {
  it('a workspace delete racing 20 project creations: no project, index entry or working token outlives it', async () => {
    const ws = await readyWorkspace();
    // 10 creations asked for before the delete, 10 right after it (one turn later): the delete's
    // transaction commits between them, so the first 10 go with the workspace and the last 10 find none.
    const before = Array.from({ length: 10 }, (_, i) => newProject(ws, `before${i}`));
    const deletion = management.deleteWorkspace(ACCOUNT, ws);
    const after = new Promise((resolve) => setImmediate(resolve)).then(() =>
      settled(Array.from({ length: 10 }, (_, i) => newProject(ws, `after${i}`))),
    );
    const created = await Promise.all(before);
    expect(await deletion).toEqual({ workspaceId: ws, deleted: true, projectsDeleted: 10 });
    for (const r of await after) expect(r).toMatchObject({ ok: false, status: 404, code: 'workspace_not_found' });
    for (const c of created) expect(tokenWorks(c.token, c.projectId)).toBe(false);
    expect([...temp.store.dbs.projects.getKeys()]).toEqual([]);
    expect(indexEntries('project')).toEqual([]);
    expect(indexEntries('project-token')).toEqual([]);
    await provisioner.settle(); // the creations' provisioning tasks find nothing to make ready
    expect([...temp.store.dbs.projects.getKeys()]).toEqual([]);
  });

  it('20 PUTs of one Yam at once start it once (one 201, the rest 200); 20 deletes of one workspace: one wins, the rest are 404', async () => {
    const ws = (await management.createWorkspace(ACCOUNT, { name: 'twice' })).workspaceId;
    const puts = await Promise.all(Array.from({ length: 20 }, () => management.putYam(ACCOUNT, ws)));
    expect(puts.filter((p) => p.created)).toHaveLength(1);
    for (const p of puts) expect(p.yam.state).toBe('creating');
    await provisioner.settle();
    expect(management.getYam(ACCOUNT, ws).state).toBe('ready');
    const deletes = await settled(Array.from({ length: 20 }, () => management.deleteWorkspace(ACCOUNT, ws)));
    expect(deletes.filter((d) => d.ok)).toHaveLength(1);
    for (const d of deletes) if (!d.ok) expect(d).toMatchObject({ status: 404, code: 'workspace_not_found' });
    expect(management.listWorkspaces(ACCOUNT).data).toEqual([]);
    expect(indexEntries('workspace')).toEqual([]);
  });

  it('30 keys created at once are all listed, each with its own id, and each authenticates', async () => {
    const created = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        keyService.createKey(ACCOUNT, { name: `k${i}`, limits: { maxConcurrent: i + 1 } }),
      ),
    );
    expect(new Set(created.map((k) => k.id)).size).toBe(30);
    const listed = keyService.listKeys(ACCOUNT).data;
    expect(listed.map((k) => k.id).sort()).toEqual(created.map((k) => k.id).sort());
    for (const k of created)
      expect(keys.authenticate(k.key)).toMatchObject({
        keyId: k.id,
        accountId: ACCOUNT,
        limits: { maxConcurrent: k.limits.maxConcurrent },
      });
  });

  it('limit changes and a revocation of one key at once: every change applied, and the key stays revoked', async () => {
    const k = await keyService.createKey(ACCOUNT, { name: 'shared' });
    await Promise.all([
      keyService.updateKey(ACCOUNT, k.id, { limits: { requestsPerMinute: 60 } }),
      keyService.updateKey(ACCOUNT, k.id, { limits: { tokensPerMinute: 1000 } }),
      keyService.revokeKey(ACCOUNT, k.id),
      keyService.updateKey(ACCOUNT, k.id, { limits: { maxConcurrent: 2 }, name: 'renamed' }),
    ]);
    const now = keyService.listKeys(ACCOUNT).data.find((x) => x.id === k.id)!;
    expect(now).toMatchObject({
      name: 'renamed',
      limits: { requestsPerMinute: 60, tokensPerMinute: 1000, maxConcurrent: 2 },
    });
    expect(now.revokedAt).not.toBeNull();
    expect(() => keys.authenticate(k.key)).toThrow(expect.objectContaining({ status: 401 }));
  });
});
