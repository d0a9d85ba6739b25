import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../../models/test-model-path.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';
import { type FleetFront, HAPROXY, startFleetFront } from '../../helpers/fleet-haproxy.ts';
import { type HearthProcess, startHearthProcess, nativeModelArgs } from '../../helpers/hearth-process.ts';
import { callApi } from '../../helpers/management-client.ts';
import { postgresBinDir, usePostgres } from '../../helpers/postgres.ts';

/**
 * Per-key limits held by a fleet as a whole (contract "Past one machine"; docs/fleet.md "Limits across the fleet"):
 * three `hearth serve` replicas on one PostgreSQL (--database-url, one master key) behind deploy/haproxy/fleet.cfg.
 * A key limited to 6 requests per minute gets 6 answers out of 18 requests spread over the three; a key limited to
 * one request at a time whose request runs on a replica killed with SIGKILL is admitted again by another replica
 * once the dead replica's lease expires (within 10 s of the kill).
 */
const addon = nativeAddonAvailable();
const ready = HAPROXY !== undefined && postgresBinDir() !== undefined && addon.ok;
const MODEL = 'local/fleet-limits';
const SECRET_KEY = randomBytes(32).toString('hex');

describe.skipIf(!ready)('per-key limits across a fleet of replicas on PostgreSQL', () => {
  const pgServer = usePostgres();
  const replicas: HearthProcess[] = [];
  let front: FleetFront;
  let admin: HearthProcess;

  /** A key with `limits`, created on the first replica and known to every replica (their record mirrors catch up within a second). */
  const createKey = async (limits: Record<string, number>) => {
    const r = await callApi<{ key: string }>(admin, 'POST', '/api/v1/keys', {
      name: `limited-${Object.keys(limits).join('-')}`,
      limits,
    });
    expect(r.status).toBe(201);
    for (const replica of replicas) {
      await expect
        .poll(
          async () =>
            (
              await fetch(`${replica.baseUrl}/api/inference/v1/models`, {
                headers: { authorization: `Bearer ${r.body.key}` },
              })
            ).status,
          { timeout: 5_000 },
        )
        .toBe(200);
    }
    return r.body.key;
  };
  const chat = (base: string, key: string, o: { stream?: boolean; maxTokens?: number } = {}) =>
    fetch(`${base}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: o.maxTokens ?? 2,
        stream: o.stream ?? false,
      }),
    });

  beforeAll(async () => {
    const url = await pgServer.server.createDatabase();
    // A held stream runs until its replica is killed: 16,384 tokens take this model seconds (4,000 about 2 s).
    const model = await ensureTinyModel({ reply: null, contextLength: 16_384 });
    const env = { HEARTH_DATABASE_URL: url, HEARTH_SECRET_KEY: SECRET_KEY, HEARTH_LOG_LEVEL: 'info' };
    // Started together: the migrations run once, under their lock.
    replicas.push(
      ...(await Promise.all(
        [1, 2, 3].map(() =>
          startHearthProcess({
            env,
            args: nativeModelArgs(model, MODEL, {
              threads: 1,
              'context-size': 16_384,
              'max-tokens': 16_000,
              'trust-proxy': true,
            }),
          }),
        ),
      )),
    );
    for (const r of replicas) await r.waitReady(120_000);
    admin = replicas[0]!;
    front = await startFleetFront({
      replicas: Object.fromEntries(replicas.map((r, i) => [i + 1, `127.0.0.1:${r.port}`])),
    });
  }, 240_000);

  afterAll(async () => {
    await front?.stop();
    for (const r of replicas) await r.stop();
  });

  it('18 requests over three replicas of a key limited to 6 per minute: 6 answered, 12 refused 429', async () => {
    const key = await createKey({ requestsPerMinute: 6 });
    const answers = await Promise.all(
      Array.from({ length: 18 }, async () => {
        const r = await chat(front.baseUrl, key);
        await r.arrayBuffer();
        return { status: r.status, replica: r.headers.get('x-hearth-replica') };
      }),
    );
    const served = new Set(answers.map((a) => a.replica));
    console.log(
      `[fleet-postgres-limits] 18 requests, limit 6/min: ${answers.filter((a) => a.status === 200).length} answered, ${answers.filter((a) => a.status === 429).length} refused, over replicas ${[...served].sort().join(', ')}`,
    );
    expect(served.size).toBeGreaterThan(1);
    expect(answers.filter((a) => a.status === 200).length).toBe(6);
    expect(answers.filter((a) => a.status === 429).length).toBe(12);
  }, 60_000);

  it("a replica killed while holding a key's only concurrent request: another replica admits the key again within 10 s", async () => {
    const key = await createKey({ maxConcurrent: 1 });
    const [holder, other] = [replicas[1]!, replicas[2]!];
    const running = await chat(holder.baseUrl, key, { stream: true, maxTokens: 16_000 });
    expect(running.status).toBe(200);
    const reader = running.body!.getReader();
    await reader.read(); // admitted: its lease is in the database
    const busy = await chat(other.baseUrl, key);
    expect(busy.status).toBe(429);
    expect(((await busy.json()) as { error: { param: string } }).error.param).toBe('limits.maxConcurrent');
    await holder.stop('SIGKILL');
    const killedAt = Date.now();
    await reader.cancel().catch(() => {});
    let status = 0;
    while (Date.now() - killedAt < 10_000) {
      const r = await chat(other.baseUrl, key);
      await r.arrayBuffer();
      status = r.status;
      if (status === 200) break;
      await new Promise((res) => setTimeout(res, 250));
    }
    console.log(`[fleet-postgres-limits] concurrency given back ${Date.now() - killedAt} ms after SIGKILL`);
    expect(status).toBe(200);
  }, 60_000);
});
