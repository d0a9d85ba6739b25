import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccountService } from '../../../src/accounts/account-service.ts';
import type { Principal } from '../../../src/accounts/authenticator.ts';
import { KeyService } from '../../../src/accounts/key-service.ts';
import { WorkspaceService } from '../../../src/workspaces/workspace-service.ts';
import { Provisioner } from '../../../src/workspaces/provisioner.ts';
import { SignInLimiter } from '../../../src/limits/sign-in-limiter.ts';
import { silentLogger } from '../../../src/log/logger.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * Text a management body stores reads back exactly as it was acknowledged. A JSON string may carry a lone
 * UTF-16 surrogate (`"\ud800"`), which has no UTF-8 form: LMDB's encoder wrote it as replacement bytes, so
 * the 201 showed one name and every later read another (a user's email too, and a password hashed from
 * such text matched other strings that encode the same). Such text is now a 400 `invalid_value` naming the
 * field; any well-formed text (NUL, emoji, CJK, right-to-left) is stored and read back unchanged. Runs on
 * the real LMDB temp.store.
 */
const FAST_KDF = { N: 2 ** 10, r: 8, p: 1 };
const ACCOUNT = 'acct-text';
const LONE = [
  'a\ud800b',
  'trailing \udfff',
  '\udc00 leading',
  'reversed \udc00\ud800 pair',
  `${'x'.repeat(150)}\ud83d`,
];
const WELL_FORMED = [
  'nul \u0000 inside',
  'emoji 😀👩‍👩‍👧 family',
  '日本語のワークスペース',
  'שלום \u202e rtl',
  'tab\tand\nnewline',
  '😀'.repeat(100),
];

const temp = useTempStore('hearth-text-integrity-');
let provisioner: Provisioner;
let management: WorkspaceService;
let keyService: KeyService;
let accounts: AccountService;
let owner: Principal;

beforeEach(async () => {
  const workspaces = new WorkspaceRepository(temp.store);
  const projects = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 7)));
  provisioner = new Provisioner(workspaces, projects, silentLogger, { delayMs: 0 });
  management = new WorkspaceService({ workspaces, projects, provisioner, baseUrl: () => 'http://127.0.0.1:1' });
  keyService = new KeyService(new ApiKeyRepository(temp.store));
  const users = new UserRepository(temp.store, FAST_KDF);
  accounts = new AccountService({
    users,
    sessions: new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 }),
    signIns: new SignInLimiter(),
  });
  const u = await users.create({ email: 'owner@text.io', password: 'owner-pass', accountId: ACCOUNT, role: 'owner' });
  owner = { kind: 'session', accountId: ACCOUNT, userId: u.id, role: 'owner', sessionEndsAt: Date.now() + 60_000 };
});
afterEach(async () => {
  provisioner.dispose();
});

const refusal = (param: string) => expect.objectContaining({ status: 400, code: 'invalid_value', param });

async function readyWorkspace(): Promise<string> {
  const ws = await management.createWorkspace(ACCOUNT, { name: 'host' });
  await management.putYam(ACCOUNT, ws.workspaceId);
  await provisioner.settle();
  return ws.workspaceId;
}

const projectBody = (name: string) => ({
  name,
  provider: 'openai',
  model: 'gpt-4o-mini',
  providerApiKey: 'sk-test-0123456789',
});

describe('a lone surrogate in stored text is a 400 naming the field', () => {
  it('workspace names: refused, and nothing is written', async () => {
    for (const name of LONE)
      await expect(management.createWorkspace(ACCOUNT, { name })).rejects.toEqual(refusal('name'));
    expect(management.listWorkspaces(ACCOUNT).data).toEqual([]);
  });

  it('API key names, at creation and in a PATCH', async () => {
    for (const name of LONE) await expect(keyService.createKey(ACCOUNT, { name })).rejects.toEqual(refusal('name'));
    expect(keyService.listKeys(ACCOUNT).data).toEqual([]);
    const k = await keyService.createKey(ACCOUNT, { name: 'ci' });
    for (const name of LONE)
      await expect(keyService.updateKey(ACCOUNT, k.id, { name })).rejects.toEqual(refusal('name'));
    expect(keyService.listKeys(ACCOUNT).data.map((x) => x.name)).toEqual(['ci']);
  });

  it('project names, at creation and in a PATCH', async () => {
    const ws = await readyWorkspace();
    for (const name of LONE)
      await expect(management.createProject(ACCOUNT, ws, projectBody(name))).rejects.toEqual(refusal('name'));
    expect(management.listProjects(ACCOUNT, ws).data).toEqual([]);
    const p = await management.createProject(ACCOUNT, ws, projectBody('bot'));
    for (const name of LONE)
      await expect(management.updateProject(ACCOUNT, ws, p.projectId, { name })).rejects.toEqual(refusal('name'));
    expect(management.getProject(ACCOUNT, ws, p.projectId).name).toBe('bot');
  });

  it('user emails and passwords, at creation and at sign-in', async () => {
    await expect(accounts.createUser(owner, { email: 'b\ud800@x.io', password: '12345678' })).rejects.toEqual(
      refusal('email'),
    );
    await expect(accounts.createUser(owner, { email: 'pw@x.io', password: 'pass\udfffword' })).rejects.toEqual(
      refusal('password'),
    );
    await expect(accounts.signIn({ email: 'owner@text.io', password: 'owner-pass\ud800' }, '10.0.0.1')).rejects.toEqual(
      refusal('password'),
    );
    expect(accounts.listUsers(owner).data.map((u) => u.email)).toEqual(['owner@text.io']);
  });
});

describe('well-formed text reads back exactly as acknowledged', () => {
  it('workspace, key and project names, including NUL, emoji and right-to-left marks', async () => {
    const ws = await readyWorkspace();
    for (const name of WELL_FORMED) {
      const created = await management.createWorkspace(ACCOUNT, { name });
      expect(management.getWorkspace(ACCOUNT, created.workspaceId).name).toBe(created.name);
      const key = await keyService.createKey(ACCOUNT, { name });
      expect(keyService.listKeys(ACCOUNT).data.find((k) => k.id === key.id)?.name).toBe(key.name);
      const p = await management.createProject(ACCOUNT, ws, projectBody(name));
      expect(management.getProject(ACCOUNT, ws, p.projectId).name).toBe(p.name);
      const renamed = await management.updateProject(ACCOUNT, ws, p.projectId, {
        name: `${[...name].slice(0, 20).join('')} 2`,
      });
      expect(management.getProject(ACCOUNT, ws, p.projectId).name).toBe(renamed.name);
    }
  });
});
