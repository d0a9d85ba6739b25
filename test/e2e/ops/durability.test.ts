import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_KEY_FILE } from '../../../src/store/master-key.ts';
import { type FakeUpstream, startFakeUpstream } from '../../fakes/index.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { callApi, readyWorkspace, until } from '../../helpers/management-client.ts';
import { providerHostArgs } from '../../helpers/provider-host.ts';

/**
 * Records acknowledged by the API survive a `kill -9`: the real server is killed with SIGKILL right after
 * its answers and restarted on the same data dir; the workspace, the projects, their (hashed) tokens and
 * (encrypted) provider keys are all there, and a project still provisioning at the kill is resumed.
 */
const PROVIDER_KEY = 'prov-durable-key-0123456789';
let fake: FakeUpstream;
let hearth: HearthProcess | undefined;
let args: string[];

beforeAll(async () => {
  fake = await startFakeUpstream('mistral', { apiKey: PROVIDER_KEY, reply: { text: 'Still here.' } });
  args = await providerHostArgs({ mistral: fake });
});

afterAll(async () => {
  await hearth?.stop();
  await fake?.close();
});

const chat = (h: HearthProcess, projectId: string, token: string) =>
  callApi(
    h,
    'POST',
    `/api/v1/inference/${projectId}/chat/completions`,
    { model: 'mistral-small-latest', messages: [{ role: 'user', content: 'Hi' }] },
    { key: token },
  );

describe('durability', () => {
  it('keeps every acknowledged record across kill -9, and the tokens and provider keys still work', async () => {
    // The first life: a slow provisioning step, so the second project is still provisioning when killed.
    const first = await startHearthProcess({ args: [...args, '--provision-delay-ms', '3000'] });
    hearth = first;
    const apiKey = first.key;
    const ws = await readyWorkspace(first, 'durable');
    const project = (
      await callApi(first, 'POST', `/api/v1/workspaces/${ws}/inference`, {
        name: 'ready one',
        provider: 'mistral',
        model: 'mistral-small-latest',
        providerApiKey: PROVIDER_KEY,
      })
    ).body as { projectId: string; token: string };
    await until(
      async () =>
        (await callApi(first, 'GET', `/api/v1/workspaces/${ws}/inference/${project.projectId}`)).body.state === 'ready',
      'the project',
    );
    expect((await chat(first, project.projectId, project.token)).status).toBe(200);
    const late = await callApi(first, 'POST', `/api/v1/workspaces/${ws}/inference`, {
      name: 'created just before the kill',
      provider: 'mistral',
      model: 'mistral-small-latest',
      providerApiKey: PROVIDER_KEY,
      temperature: 0.7,
    });
    expect(late.status).toBe(201);
    expect(late.body.state).toBe('provisioning');
    await first.stop('SIGKILL');
    expect(first.proc.signalCode).toBe('SIGKILL');

    // The second life, on the same data dir (and so the same master key file).
    const second = await startHearthProcess({ args, dataDir: first.dataDir });
    hearth = second;
    expect(fs.statSync(`${first.dataDir}/${MASTER_KEY_FILE}`).mode & 0o777).toBe(0o600);
    const workspace = await callApi(second, 'GET', `/api/v1/workspaces/${ws}`, undefined, { key: apiKey });
    expect(workspace.status).toBe(200);
    expect(workspace.body).toMatchObject({ name: 'durable', yam: { state: 'ready' } });
    const kept = await callApi(second, 'GET', `/api/v1/workspaces/${ws}/inference/${project.projectId}`, undefined, {
      key: apiKey,
    });
    expect(kept.body).toMatchObject({ name: 'ready one', state: 'ready', providerKey: { last4: '6789' } });
    const answer = await chat(second, project.projectId, project.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ choices: [{ message: { content: 'Still here.' } }] });

    const lateId = late.body.projectId as string;
    await until(
      async () =>
        (await callApi(second, 'GET', `/api/v1/workspaces/${ws}/inference/${lateId}`, undefined, { key: apiKey })).body
          .state === 'ready',
      'the resumed project',
    );
    expect((await chat(second, lateId, late.body.token as string)).status).toBe(200);
    expect(fake.lastRequest()).toMatchObject({ temperature: 0.7 });
    expect(second.logs()).toContain('"msg":"resuming provisioning"');
  });
});
