import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Nothing acknowledged is lost when a replica dies (issue #25 item 3): two `hearth serve` replicas on one
 * PostgreSQL take bursts of workspace creations from concurrent clients; one replica is killed with SIGKILL in the
 * middle of its burst while the other keeps taking its own. Then every creation that was answered 201, on either
 * replica, is a workspace the survivor lists (exactly once), and a replica started afterwards on the same database
 * lists the same set. Creations cut by the kill (no answer, or the replica's managed front answering 502 bad_gateway
 * for the process that died under it) may or may not have committed: they are counted apart, never required, and
 * never duplicated.
 */
const pgServer = usePostgres();
const SECRET_KEY = randomBytes(32).toString('hex');
const CLIENTS_PER_REPLICA = 4;

interface Burst {
  acknowledged: string[];
  cut: string[];
  refused: Array<{ name: string; status: number; code: string }>;
}

/** `clients` loops creating workspaces named `${prefix}-${client}-${n}` until `stop()` says so. */
function burst(baseUrl: string, key: string, prefix: string, stop: () => boolean, out: Burst): Promise<Burst> {
  const client = async (c: number) => {
    for (let n = 0; !stop(); n++) {
      const name = `${prefix}-${c}-${n}`;
      try {
        const r = await fetch(`${baseUrl}/api/v1/workspaces`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name }),
        });
        if (r.status === 201) {
          out.acknowledged.push(name);
          continue;
        }
        const code = ((await r.json()) as { error?: { code?: string } }).error?.code ?? '';
        if (r.status === 502 && code === 'bad_gateway') {
          // The replica's front answered for it: Hearth died with the request in flight, no answer from it.
          out.cut.push(name);
          return;
        }
        out.refused.push({ name, status: r.status, code });
      } catch {
        out.cut.push(name); // the connection died with the replica: no answer
        return;
      }
    }
  };
  return Promise.all(Array.from({ length: CLIENTS_PER_REPLICA }, (_, c) => client(c))).then(() => out);
}

/** Every workspace name the replica lists (the list is whole: no pages). */
async function listNames(baseUrl: string, key: string): Promise<string[]> {
  const r = await fetch(`${baseUrl}/api/v1/workspaces`, { headers: { authorization: `Bearer ${key}` } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: Array<{ name: string }> }).data.map((w) => w.name);
}

describe('a replica killed with SIGKILL during bursts of creations', () => {
  let url: string;
  let model: string;
  const started: HearthProcess[] = [];
  const replica = async (): Promise<HearthProcess> => {
    const p = await startHearthProcess({
      args: ['--model', model, '--model-id', 'local/fleet', '--engine', 'instant', '--workers', '1'],
      env: {
        HEARTH_DATABASE_URL: url,
        HEARTH_SECRET_KEY: SECRET_KEY,
        HEARTH_LOG_LEVEL: 'info',
        HEARTH_PROVISION_DELAY_MS: '0',
      },
    });
    started.push(p);
    await p.waitReady(120_000);
    return p;
  };

  beforeAll(async () => {
    url = await pgServer.server.createDatabase();
    model = await tinyChatModel();
  }, 60_000);

  afterAll(async () => {
    for (const p of started) await p.stop('SIGKILL').catch(() => {});
  });

  it('loses no acknowledged creation, duplicates none, and a new replica sees them all', async () => {
    const [doomed, survivor] = [await replica(), await replica()];
    let doomedStop = false;
    let survivorStop = false;
    const a: Burst = { acknowledged: [], cut: [], refused: [] };
    const b: Burst = { acknowledged: [], cut: [], refused: [] };
    const doomedBurst = burst(doomed.baseUrl, doomed.key, 'a', () => doomedStop, a);
    const survivorBurst = burst(survivor.baseUrl, survivor.key, 'b', () => survivorStop, b);
    // Kill once both replicas have acknowledged a few dozen creations: mid-burst, with writes in flight.
    for (let i = 0; i < 600 && (a.acknowledged.length < 40 || b.acknowledged.length < 40); i++)
      await new Promise((r) => setTimeout(r, 25));
    doomed.proc.kill('SIGKILL');
    await doomedBurst;
    doomedStop = true;
    // The survivor keeps creating for a while after the kill.
    await new Promise((r) => setTimeout(r, 500));
    survivorStop = true;
    await survivorBurst;

    expect(a.acknowledged.length).toBeGreaterThanOrEqual(40);
    expect(b.acknowledged.length).toBeGreaterThan(0);
    expect(b.cut).toEqual([]);
    expect(b.refused).toEqual([]);
    // The doomed replica refused nothing before it died (a refusal would be a store fault, not the kill).
    expect(a.refused).toEqual([]);

    const listed = await listNames(survivor.baseUrl, survivor.key);
    const counts = new Map<string, number>();
    for (const n of listed) counts.set(n, (counts.get(n) ?? 0) + 1);
    const lost = [...a.acknowledged, ...b.acknowledged].filter((n) => !counts.has(n));
    expect(lost).toEqual([]);
    expect([...counts.values()].every((c) => c === 1)).toBe(true);
    // Whatever else is listed was a creation cut by the kill (it may have committed before the answer was lost).
    const acknowledged = new Set([...a.acknowledged, ...b.acknowledged]);
    const extra = listed.filter((n) => !acknowledged.has(n));
    expect(extra.every((n) => a.cut.includes(n))).toBe(true);

    // A replica started now loads the same records from the database.
    const late = await replica();
    expect((await listNames(late.baseUrl, late.key)).sort()).toEqual([...listed].sort());
    console.log(
      JSON.stringify({
        acknowledgedOnKilled: a.acknowledged.length,
        cutByKill: a.cut.length,
        cutCommitted: extra.length,
        acknowledgedOnSurvivor: b.acknowledged.length,
        lost: lost.length,
      }),
    );
  }, 180_000);
});
