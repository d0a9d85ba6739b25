import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FleetFront, HAPROXY, startFleetFront, until } from '../../helpers/fleet-haproxy.ts';

/**
 * deploy/haproxy/fleet.cfg's routing rules (docs/fleet.md "Routing"), against stand-in replicas: small HTTP servers
 * that answer /health and say who they are, so the hash ring, the health checks and the fallbacks can be observed
 * exactly. The same configuration in front of real `hearth serve` replicas (prompt cache, a replica killed):
 * test/e2e/fleet/fleet-replicas.test.ts.
 */

interface StubReplica {
  name: string;
  address: string;
  healthy: boolean;
  /** Answers every request (but /health) with this status instead of 200, when set. */
  answer?: number;
  /** Requests (other than /health) this stub received. */
  served: number;
  /** Holds every request to /hold (or to any path with the query `?hold`) open until `release()`. */
  release(): void;
  /** Requests to /hold held open now. */
  holding(): number;
  /** When each held request's connection from the front ended before its answer (the front gave it up), Date.now(). */
  abandoned: number[];
  close(): Promise<void>;
}

async function startStub(name: string): Promise<StubReplica> {
  const held: http.ServerResponse[] = [];
  const stub = { name, healthy: true, served: 0, abandoned: [] as number[] } as StubReplica;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') {
        res.writeHead(stub.healthy ? 200 : 503, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      stub.served++;
      if (req.url === '/hold' || req.url?.endsWith('?hold')) {
        held.push(res);
        res.on('close', () => {
          if (res.writableEnded) return;
          stub.abandoned.push(Date.now());
          held.splice(held.indexOf(res), 1);
        });
        return;
      }
      res
        .writeHead(stub.answer ?? 200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ replica: name, url: req.url }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.holding = () => held.length;
  stub.release = () => {
    for (const res of held.splice(0)) res.writeHead(200).end('{}');
  };
  stub.close = () =>
    new Promise<void>((resolve) => {
      stub.release();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return stub;
}

/** Which stub answered a request carrying the affinity header `key` (from the stub's body, checked against x-hearth-replica). */
async function routeOf(front: FleetFront, key: string): Promise<string> {
  const r = await fetch(`${front.baseUrl}/api/inference/v1/models`, { headers: { 'x-session-affinity': key } });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { replica: string };
  return body.replica;
}

async function routes(front: FleetFront, keys: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of keys) out.set(key, await routeOf(front, key));
  return out;
}

/** Waits until the front's health checks have every listed stub up (each answers some request). */
async function allUp(front: FleetFront, names: string[]): Promise<void> {
  await until(
    async () => {
      const seen = new Set(
        (
          await routes(
            front,
            Array.from({ length: 40 }, (_, i) => `probe-${i}`),
          )
        ).values(),
      );
      return names.every((n) => seen.has(n));
    },
    `replicas ${names.join(', ')} up`,
  );
}

const KEYS = Array.from({ length: 300 }, (_, i) => `conversation-${i}`);
const suiteName = HAPROXY
  ? 'fleet routing (deploy/haproxy/fleet.cfg) over stand-in replicas'
  : 'fleet routing: SKIPPED, the haproxy binary is not installed (.ci/apt-packages installs it)';

describe.skipIf(HAPROXY === undefined)(suiteName, () => {
  const stubs: StubReplica[] = [];
  const fronts: FleetFront[] = [];
  const front = async (replicas: Record<number, string>, appHost?: string) => {
    const f = await startFleetFront({ replicas, appHost });
    fronts.push(f);
    return f;
  };

  beforeAll(async () => {
    for (const name of ['r1', 'r2', 'r3']) stubs.push(await startStub(name));
  });
  afterEach(async () => {
    for (const f of fronts.splice(0)) await f.stop();
    for (const s of stubs) {
      s.healthy = true;
      delete s.answer;
      s.release();
    }
  });
  afterAll(async () => {
    for (const s of stubs) await s.close();
  });

  it('the same affinity key always reaches the same replica, and the keys spread over all of them', async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address, 3: stubs[2]!.address });
    await allUp(f, ['r1', 'r2', 'r3']);
    const first = await routes(f, KEYS);
    const again = await routes(f, KEYS);
    expect(again).toEqual(first);
    const counts = new Map<string, number>();
    for (const r of first.values()) counts.set(r, (counts.get(r) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(['r1', 'r2', 'r3']);
    // x-hearth-replica names the replica that answered.
    const r = await fetch(`${f.baseUrl}/anything`, { headers: { 'x-session-affinity': KEYS[0]! } });
    expect(r.headers.get('x-hearth-replica')).toBe(((await r.json()) as { replica: string }).replica);
  });

  it('adding a replica moves only the keys it takes: every moved key moves to the new replica', async () => {
    const two = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address });
    await allUp(two, ['r1', 'r2']);
    const before = await routes(two, KEYS);
    await two.stop();
    const three = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address, 3: stubs[2]!.address });
    await allUp(three, ['r1', 'r2', 'r3']);
    const after = await routes(three, KEYS);
    const moved = KEYS.filter((k) => before.get(k) !== after.get(k));
    console.log(
      `[fleet-routing] adding a third replica moved ${moved.length} of ${KEYS.length} affinity keys, ${moved.filter((k) => after.get(k) === 'r3').length} of them to r3`,
    );
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.every((k) => after.get(k) === 'r3')).toBe(true);
    // A modulo (map-based) hash would move about two thirds; the consistent ring moves the new replica's share.
    expect(moved.length).toBeLessThan(KEYS.length / 2);
  });

  it('a replica failing its health check leaves the pool (only its keys move) and rejoins when it passes again', async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address, 3: stubs[2]!.address });
    await allUp(f, ['r1', 'r2', 'r3']);
    const before = await routes(f, KEYS);
    stubs[1]!.healthy = false;
    await until(async () => ![...(await routes(f, KEYS)).values()].includes('r2'), 'r2 out of the pool');
    const during = await routes(f, KEYS);
    for (const k of KEYS) if (before.get(k) !== 'r2') expect(during.get(k)).toBe(before.get(k));
    stubs[1]!.healthy = true;
    await until(async () => [...(await routes(f, KEYS)).values()].includes('r2'), 'r2 back in the pool');
    expect(await routes(f, KEYS)).toEqual(before);
  });

  it('a replica that stops listening: requests still succeed at once (a refused connection is retried on another replica)', async () => {
    const extra = await startStub('r4');
    const f = await front({ 1: stubs[0]!.address, 4: extra.address });
    await allUp(f, ['r1', 'r4']);
    const mapped = await routes(f, KEYS);
    const onR4 = KEYS.filter((k) => mapped.get(k) === 'r4');
    expect(onR4.length).toBeGreaterThan(0);
    await extra.close();
    // No wait for the health check: each request either reaches r1 directly or is refused by r4 and redispatched.
    for (const k of onR4.slice(0, 20)) expect(await routeOf(f, k)).toBe('r1');
  });

  it("a replica's 503 (a refusal before the request ran) is retried once on another replica; a 500 is not", async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address });
    await allUp(f, ['r1', 'r2']);
    const mapped = await routes(f, KEYS.slice(0, 40));
    const onR1 = KEYS.slice(0, 40).filter((k) => mapped.get(k) === 'r1');
    expect(onR1.length).toBeGreaterThan(0);
    /** A chat request whose affinity key maps to r1. */
    const toR1 = () =>
      fetch(`${f.baseUrl}/api/inference/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-session-affinity': onR1[0]!, 'content-type': 'application/json' },
        body: '{"model":"m"}',
      });
    stubs[0]!.answer = 503;
    const before = stubs[0]!.served;
    const r = await toR1();
    expect(r.status).toBe(200);
    expect(((await r.json()) as { replica: string }).replica).toBe('r2');
    expect(stubs[0]!.served).toBe(before + 1);
    stubs[0]!.answer = 500;
    const again = await toR1();
    expect(again.status).toBe(500);
    expect(((await again.json()) as { replica: string }).replica).toBe('r1');
  });

  it("the body's `user` (or `prompt_cache_key`) is the affinity key when no header is sent", async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address, 3: stubs[2]!.address });
    await allUp(f, ['r1', 'r2', 'r3']);
    const byHeader = await routes(f, KEYS.slice(0, 30));
    for (const key of KEYS.slice(0, 30)) {
      for (const field of ['user', 'prompt_cache_key']) {
        const r = await fetch(`${f.baseUrl}/api/inference/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], [field]: key }),
        });
        expect(((await r.json()) as { replica: string }).replica).toBe(byHeader.get(key));
      }
    }
  });

  it('without an affinity key the least-loaded replica gets the request', async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address });
    await allUp(f, ['r1', 'r2']);
    // One request held open on whichever replica takes it; every later request goes to the other one.
    const held = fetch(`${f.baseUrl}/hold`).then((r) => r.arrayBuffer());
    await until(async () => stubs[0]!.holding() + stubs[1]!.holding() === 1, 'the held request to arrive');
    const busy = stubs[0]!.holding() === 1 ? 'r1' : 'r2';
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const r = await fetch(`${f.baseUrl}/api/inference/v1/models`);
      seen.add(((await r.json()) as { replica: string }).replica);
    }
    expect([...seen]).toEqual([busy === 'r1' ? 'r2' : 'r1']);
    for (const s of stubs) s.release();
    await held;
  });

  it('/apps/ goes to the app host alone; with the app host gone it answers 503 app_host_unavailable', async () => {
    const appHost = await startStub('apps');
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address }, appHost.address);
    await until(async () => (await fetch(`${f.baseUrl}/apps/a1/page`)).status === 200, 'the app host up');
    for (let i = 0; i < 10; i++) {
      const r = await fetch(`${f.baseUrl}/apps/a1/page?i=${i}`, { headers: { 'x-session-affinity': KEYS[i]! } });
      expect(((await r.json()) as { replica: string }).replica).toBe('apps');
    }
    // The apps API, the Yam and a workspace's deletion go there too; the rest of the workspace API does not.
    const served = async (method: string, url: string) =>
      ((await (await fetch(`${f.baseUrl}${url}`, { method })).json()) as { replica: string }).replica;
    for (const [method, url] of [
      ['POST', '/api/v1/workspaces/w1/apps'],
      ['GET', '/api/v1/workspaces/w1/apps/a1/logs'],
      ['PUT', '/api/v1/workspaces/w1/yam'],
      ['DELETE', '/api/v1/workspaces/w1'],
    ] as const) {
      expect(await served(method, url), `${method} ${url}`).toBe('apps');
    }
    for (const [method, url] of [
      ['GET', '/api/v1/workspaces/w1'],
      ['GET', '/api/v1/workspaces/w1/projects'],
      ['GET', '/api/v1/workspaces'],
      ['GET', '/api/v1/workspaces/w1/appsx'],
    ] as const) {
      expect(await served(method, url), `${method} ${url}`).not.toBe('apps');
    }
    await appHost.close();
    await until(async () => (await fetch(`${f.baseUrl}/apps/a1/page`)).status === 503, 'the app host out');
    const r = await fetch(`${f.baseUrl}/apps/a1/page`);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('app_host_unavailable');
    expect((await fetch(`${f.baseUrl}/api/v1/workspaces/w1/apps`)).status).toBe(503);
    // The API keeps being served by the replicas.
    expect((await fetch(`${f.baseUrl}/api/inference/v1/models`)).status).toBe(200);
  });

  it('a client that closes (FIN) while its request is held ends its exchange with the replica within 1 s, keyed or not (contract "A client that leaves")', async () => {
    const f = await front({ 1: stubs[0]!.address, 2: stubs[1]!.address });
    await allUp(f, ['r1', 'r2']);
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'go' }] });
    const cases: Array<[string, string, string]> = [
      ['inference, no key (fleet_least)', '/api/inference/v1/chat/completions?hold', ''],
      [
        'inference, keyed (fleet_affinity)',
        '/api/inference/v1/chat/completions?hold',
        'x-session-affinity: conversation-1\r\n',
      ],
      ['a project endpoint (fleet_projects)', '/api/v1/inference/p1/chat/completions?hold', ''],
    ];
    for (const [what, path, header] of cases) {
      const abandoned = () => [...stubs[0]!.abandoned, ...stubs[1]!.abandoned];
      const before = abandoned().length;
      const socket = net.connect(Number(new URL(f.baseUrl).port), '127.0.0.1');
      socket.on('error', () => {});
      await new Promise((resolve) => socket.on('connect', resolve));
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${header}Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      await until(async () => stubs[0]!.holding() + stubs[1]!.holding() === 1, `${what}: the request held`);
      const leftAt = Date.now();
      await new Promise<void>((resolve) => socket.end(() => resolve()));
      socket.destroy();
      await until(async () => abandoned().length === before + 1, `${what}: the replica's exchange ended`, 5_000);
      expect(Math.max(...abandoned()) - leftAt, what).toBeLessThanOrEqual(1_000); // as the replica saw it
    }
  });

  it('no replica up: 503 service_unavailable in the JSON error shape', async () => {
    const f = await front({ 1: stubs[0]!.address });
    await allUp(f, ['r1']);
    stubs[0]!.healthy = false;
    await until(async () => (await fetch(`${f.baseUrl}/api/inference/v1/models`)).status === 503, 'r1 out');
    const r = await fetch(`${f.baseUrl}/api/inference/v1/models`);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
  });
});
