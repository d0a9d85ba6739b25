import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceService } from '../../../src/workspaces/workspace-service.ts';
import { Provisioner, type YamHost } from '../../../src/workspaces/provisioner.ts';
import { silentLogger } from '../../../src/log/logger.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * A Yam whose preparation throws (the app host's sandbox check cannot make its scratch directory: disk
 * full, a read-only or unwritable root) ends `failed` with a reason, like one whose preparation reports a
 * problem. Before, the throw was only logged and the Yam stayed `creating` until the next restart: GET
 * polled forever, and PUT, idempotent on a Yam that is not `failed`, never tried again.
 */
const ACCOUNT = 'acct-yam';
const temp = useTempStore('hearth-yam-throw-');
let provisioner: Provisioner;
let management: WorkspaceService;
let host: { calls: number; fail: Error | null };

beforeEach(() => {
  const workspaces = new WorkspaceRepository(temp.store);
  const projects = new ProjectRepository(temp.store, new ProviderKeyCipher(Buffer.alloc(32, 5)));
  host = { calls: 0, fail: new Error("ENOSPC: no space left on device, mkdtemp '/data/apps/.sandbox-check-XXXXXX'") };
  const yamHost: YamHost = {
    prepareYam: async () => {
      host.calls++;
      await new Promise((resolve) => setImmediate(resolve));
      if (host.fail) throw host.fail;
      return null;
    },
  };
  provisioner = new Provisioner(workspaces, projects, silentLogger, { delayMs: 0 }, yamHost);
  management = new WorkspaceService({ workspaces, projects, provisioner, baseUrl: () => 'http://127.0.0.1:1' });
});
afterEach(async () => {
  provisioner.dispose();
});

describe('a Yam whose preparation throws', () => {
  it('ends failed with the reason; PUT then tries again and the Yam becomes ready', async () => {
    const ws = (await management.createWorkspace(ACCOUNT, { name: 'disk full' })).workspaceId;
    expect((await management.putYam(ACCOUNT, ws)).yam.state).toBe('creating');
    await provisioner.settle();
    const failed = management.getYam(ACCOUNT, ws);
    expect(failed.state).toBe('failed');
    expect(failed.error).toContain('no space left on device');
    expect(failed.readyAt).toBeNull();

    host.fail = null;
    const again = await management.putYam(ACCOUNT, ws);
    expect(again).toMatchObject({ created: true, yam: { state: 'creating', error: null } });
    await provisioner.settle();
    expect(management.getYam(ACCOUNT, ws)).toMatchObject({ state: 'ready', error: null });
    expect(host.calls).toBe(2);
  });

  it('a thrown non-Error value is a failed Yam too', async () => {
    const ws = (await management.createWorkspace(ACCOUNT, { name: 'odd throw' })).workspaceId;
    host.fail = 'sandbox exploded' as unknown as Error;
    await management.putYam(ACCOUNT, ws);
    await provisioner.settle();
    expect(management.getYam(ACCOUNT, ws)).toMatchObject({ state: 'failed' });
    expect(management.getYam(ACCOUNT, ws).error).toContain('sandbox exploded');
  });
});
