import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { callApi, mustCall } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * `hearth serve --app-host false`, a fleet replica other than the app host (docs/fleet.md "Apps in a fleet"): it
 * runs no app and builds no deployment; every app request and apps API call answers 503 app_host_unavailable with
 * Retry-After, while the rest of the management API and inference work as on any replica.
 */
let hearth: HearthProcess;

describe('a replica started with --app-host false', () => {
  beforeAll(async () => {
    hearth = await startHearthProcess({
      args: ['--model', await tinyModel(), '--model-id', 'local/tiny', '--engine', 'instant', '--app-host', 'false'],
    });
    await hearth.waitReady();
  }, 60_000);
  afterAll(async () => {
    await hearth?.stop();
  });

  it('answers the apps API and /apps/ with 503 app_host_unavailable + Retry-After, and keeps no app directory', async () => {
    const ws = (await mustCall<{ workspaceId: string }>(hearth, 'POST', '/api/v1/workspaces', { name: 'fleet' }))
      .workspaceId;
    const calls: Array<[string, string, unknown?]> = [
      ['POST', `/api/v1/workspaces/${ws}/apps`, { name: 'a' }],
      ['GET', `/api/v1/workspaces/${ws}/apps`],
      ['GET', `/api/v1/workspaces/${ws}/apps/app_x`],
      ['POST', `/api/v1/workspaces/${ws}/apps/app_x/deployments`, { repository: 'https://example.com/a.git' }],
      ['GET', '/apps/app_x'],
      ['POST', '/apps/app_x/some/path', { any: 'thing' }],
    ];
    for (const [method, url, body] of calls) {
      const r = await callApi<{ error: { code: string; type: string } }>(hearth, method, url, body);
      expect(r.status, `${method} ${url}`).toBe(503);
      expect(r.body.error).toMatchObject({ code: 'app_host_unavailable', type: 'unavailable_error' });
      expect(r.headers.get('retry-after')).toBe('5');
    }
    expect(fs.existsSync(path.join(hearth.dataDir, 'apps'))).toBe(false);
  });

  it('serves the rest: workspaces, their deletion, and inference', async () => {
    const ws = (await mustCall<{ workspaceId: string }>(hearth, 'POST', '/api/v1/workspaces', { name: 'other' }))
      .workspaceId;
    expect((await callApi(hearth, 'GET', `/api/v1/workspaces/${ws}`)).status).toBe(200);
    expect((await callApi(hearth, 'DELETE', `/api/v1/workspaces/${ws}`)).status).toBeLessThan(300);
    const r = await callApi<{ choices: unknown[] }>(hearth, 'POST', '/api/inference/v1/chat/completions', {
      model: 'local/tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    expect(r.status).toBe(200);
  });
});
