import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FleetFront, HAPROXY, startFleetFront, until } from '../../helpers/fleet-haproxy.ts';
import { type HearthProcess, startHearthProcess, nativeModelArgs } from '../../helpers/hearth-process.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';

/**
 * Three real `hearth serve` replicas (the tiny chat model, the native engine) behind deploy/haproxy/fleet.cfg
 * (docs/fleet.md "Routing"): a 4-turn conversation sent with an affinity key reuses its prompt on turns 2-4
 * (`usage.prompt_tokens_details.cached_tokens` > 0) because every turn lands on the replica whose slot holds it;
 * a replica killed with SIGKILL leaves the pool and the conversation goes on on another replica.
 *
 * The replicas are one fleet as in production: one PostgreSQL (started by the test) for their records and one
 * HEARTH_SECRET_KEY; the API key made by the first is used through the front.
 */
const addon = nativeAddonAvailable();

/** Whether 127.0.0.1:port accepts a TCP connection now. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
const MODEL = 'local/fleet';
const SECRET_KEY = randomBytes(32).toString('hex');
const REPLICAS = 3;

interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}
interface Turn {
  status: number;
  replica: string | null;
  cachedTokens: number;
  promptTokens: number;
  reply: string;
  error?: unknown;
}

const suiteName = HAPROXY
  ? 'a fleet of hearth serve replicas behind deploy/haproxy/fleet.cfg'
  : 'a fleet of replicas: SKIPPED, the haproxy binary is not installed (.ci/apt-packages installs it)';

describe.skipIf(HAPROXY === undefined || !addon.ok)(suiteName, () => {
  const pgServer = usePostgres();
  const replicas = new Map<string, HearthProcess>();
  let front: FleetFront;
  let key: string;

  async function turn(messages: ChatMessage[], affinity: string | undefined): Promise<Turn> {
    const r = await fetch(`${front.baseUrl}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(affinity ? { 'x-session-affinity': affinity } : {}),
      },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 4 }),
    });
    const body = (await r.json()) as {
      choices?: Array<{ message: { content: string } }>;
      usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
      error?: unknown;
    };
    return {
      status: r.status,
      replica: r.headers.get('x-hearth-replica'),
      cachedTokens: body.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      promptTokens: body.usage?.prompt_tokens ?? 0,
      reply: body.choices?.[0]?.message.content ?? '',
      ...(body.error ? { error: body.error } : {}),
    };
  }

  /** A conversation of `turns` user turns, each sent with the whole history so far. */
  async function conversation(name: string, turns: number, affinity: string | undefined): Promise<Turn[]> {
    const messages: ChatMessage[] = [];
    const out: Turn[] = [];
    for (let i = 0; i < turns; i++) {
      messages.push({
        role: 'user',
        content: `${name}: turn ${i + 1} of a conversation about ${'rivers and mountains '.repeat(4)}`,
      });
      const t = await turn(messages, affinity);
      expect(t.status, JSON.stringify(t)).toBe(200);
      out.push(t);
      messages.push({ role: 'assistant', content: t.reply });
    }
    return out;
  }

  beforeAll(async () => {
    const model = await tinyChatModel();
    const url = await pgServer.server.createDatabase();
    const addresses: Record<number, string> = {};
    for (let slot = 1; slot <= REPLICAS; slot++) {
      const p = await startHearthProcess({
        args: nativeModelArgs(model, MODEL, { threads: 1, 'context-size': 512, 'trust-proxy': true }),
        env: { HEARTH_SECRET_KEY: SECRET_KEY, HEARTH_LOG_LEVEL: 'info', HEARTH_DATABASE_URL: url },
      });
      if (slot === 1) key = p.key;
      replicas.set(`r${slot}`, p);
      addresses[slot] = `127.0.0.1:${p.port}`;
    }
    for (const p of replicas.values()) await p.waitReady(120_000);
    front = await startFleetFront({ replicas: addresses });
    // Every replica in the pool (servers start up; a check failed during start-up would have taken one out).
    await until(async () => {
      const seen = new Set<string | null>();
      for (let i = 0; i < 12; i++)
        seen.add(
          (
            await fetch(`${front.baseUrl}/api/inference/v1/models`, {
              headers: { authorization: `Bearer ${key}`, 'x-session-affinity': `probe-${i}` },
            })
          ).headers.get('x-hearth-replica'),
        );
      return seen.size === REPLICAS;
    }, 'every replica in the pool');
  }, 240_000);

  afterAll(async () => {
    await front?.stop();
    for (const p of replicas.values()) await p.stop();
  });

  it('a 4-turn conversation with an affinity key stays on one replica and reuses its prompt on turns 2-4', async () => {
    const turns = await conversation('alpha', 4, 'conversation-alpha');
    console.log(
      `[fleet-replicas] with affinity: ${turns.map((t) => `${t.replica} cached ${t.cachedTokens}/${t.promptTokens}`).join(', ')}`,
    );
    expect(new Set(turns.map((t) => t.replica)).size).toBe(1);
    for (const t of turns.slice(1)) expect(t.cachedTokens).toBeGreaterThan(0);
  }, 60_000);

  it('without a key the turns spread over the replicas (least-loaded, ties in turn)', async () => {
    const turns = await conversation('beta', 4, undefined);
    console.log(
      `[fleet-replicas] without affinity: ${turns.map((t) => `${t.replica} cached ${t.cachedTokens}/${t.promptTokens}`).join(', ')}`,
    );
    expect(new Set(turns.map((t) => t.replica)).size).toBeGreaterThan(1);
  }, 60_000);

  it('SIGKILL on the replica holding a conversation: it leaves the pool, the next turns succeed on another replica', async () => {
    const first = await conversation('gamma', 2, 'conversation-gamma');
    const holder = first[0]!.replica!;
    const killed = replicas.get(holder)!;
    await killed.stop('SIGKILL');
    // Its managed front dies with it a moment later (pdeathsig): a connection accepted in that moment is reset, and
    // the fleet front answers that request 502 (it may have run: not retried). Once the port refuses connections ...
    await until(async () => !(await accepts(killed.port)), 'the killed replica to refuse connections');
    // ... at once, before any health check has run: a refused connection is redispatched.
    const messages: ChatMessage[] = [{ role: 'user', content: 'gamma: after the crash' }];
    for (let i = 0; i < 5; i++) {
      const t = await turn(messages, 'conversation-gamma');
      expect(t.status, JSON.stringify(t)).toBe(200);
      expect(t.replica).not.toBe(holder);
    }
    // And it stays out: requests without a key (least-loaded) never reach it.
    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${front.baseUrl}/api/inference/v1/models`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-hearth-replica')).not.toBe(holder);
    }
    // The moved conversation now stays on its new replica and reuses its prompt there.
    const after = await conversation('gamma-after', 3, 'conversation-gamma');
    expect(new Set(after.map((t) => t.replica)).size).toBe(1);
    for (const t of after.slice(1)) expect(t.cachedTokens).toBeGreaterThan(0);
  }, 60_000);
});
