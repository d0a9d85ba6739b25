import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { callApi, mustCall } from '../../helpers/management-client.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Two real `hearth serve` replicas on one PostgreSQL database (contract "Past one machine"): what a client makes
 * through one is what the next request finds through the other, at once, with no wait in between, as behind a
 * load balancer without affinity. A workspace made on A is found on B (by id and in the list), one removed on B is
 * gone on A; a stored response made on A is retrieved and continued on B, and one deleted on B is gone on A.
 */
const pgServer = usePostgres();
const ROUNDS = 30;
const MODEL_ID = 'local/tiny';
let a: HearthProcess;
let b: HearthProcess;

beforeAll(async () => {
  const env = { HEARTH_DATABASE_URL: await pgServer.server.createDatabase(), HEARTH_SECRET_KEY: 'cd'.repeat(32) };
  const args = ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--engine', 'instant', '--front', 'off'];
  a = await startHearthProcess({ args, env });
  b = await startHearthProcess({ args, env });
  await Promise.all([a.waitReady(), b.waitReady()]);
}, 120_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
});

describe("two replicas read each other's writes at once", () => {
  it(`a workspace made on one is found on the other (by id, in the list), and one removed is gone, ${ROUNDS} times`, async () => {
    const misses: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const [maker, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const ws = await mustCall<{ workspaceId: string }>(maker, 'POST', '/api/v1/workspaces', { name: `ws ${i}` });
      const byId = await callApi(reader, 'GET', `/api/v1/workspaces/${ws.workspaceId}`, undefined, { key: a.key });
      const list = await callApi<{ data: { workspaceId: string }[] }>(reader, 'GET', '/api/v1/workspaces', undefined, {
        key: a.key,
      });
      if (byId.status !== 200) misses.push(`round ${i}: GET by id ${byId.status}`);
      if (!list.body.data.some((w) => w.workspaceId === ws.workspaceId)) misses.push(`round ${i}: not in the list`);
      await mustCall(reader, 'DELETE', `/api/v1/workspaces/${ws.workspaceId}`, undefined, { key: a.key });
      const gone = await callApi(maker, 'GET', `/api/v1/workspaces/${ws.workspaceId}`, undefined, { key: a.key });
      if (gone.status !== 404) misses.push(`round ${i}: removed, still ${gone.status}`);
    }
    expect(misses).toEqual([]);
  });

  it(`a stored response made on one is retrieved and continued on the other, and one deleted is gone, ${ROUNDS} times`, async () => {
    const misses: string[] = [];
    const respond = (h: HearthProcess, body: Record<string, unknown>) =>
      callApi<{ id: string }>(
        h,
        'POST',
        '/api/inference/v1/responses',
        { model: MODEL_ID, max_output_tokens: 2, ...body },
        { key: a.key },
      );
    for (let i = 0; i < ROUNDS; i++) {
      const [maker, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const first = await respond(maker, { input: `turn ${i}` });
      expect(first.status).toBe(200);
      const got = await callApi<{ id: string }>(
        reader,
        'GET',
        `/api/inference/v1/responses/${first.body.id}`,
        undefined,
        { key: a.key },
      );
      if (got.status !== 200 || got.body.id !== first.body.id) misses.push(`round ${i}: retrieve ${got.status}`);
      const next = await respond(reader, { previous_response_id: first.body.id, input: 'and then?' });
      if (next.status !== 200) misses.push(`round ${i}: continue ${next.status}`);
      const deleted = await callApi(reader, 'DELETE', `/api/inference/v1/responses/${first.body.id}`, undefined, {
        key: a.key,
      });
      if (deleted.status !== 200) misses.push(`round ${i}: delete ${deleted.status}`);
      const gone = await callApi(maker, 'GET', `/api/inference/v1/responses/${first.body.id}`, undefined, {
        key: a.key,
      });
      if (gone.status !== 404) misses.push(`round ${i}: deleted, still ${gone.status}`);
    }
    expect(misses).toEqual([]);
  });
});
