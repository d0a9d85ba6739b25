import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, hearthCli, instantModelArgs, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Ten `hearth keys create` processes at once on the data dir of a running server that takes writes of its own
 * (keys created through the management API, chat completions that record each key's last use): every one exits 0
 * with its key, every key authenticates at once, and `hearth keys list` holds them all. LMDB serialises the
 * writers of all processes (one write lock), so none is lost and none waits for a time-out; this checks it under
 * the load of eleven processes on one data dir, three rounds in a row. (Under a heavy load lmdb-js fails a commit
 * now and then, in the CLI or the server: HearthStore.transaction runs it again; lmdb-commit-retry.test.ts.)
 */
const BIN = path.resolve(import.meta.dirname, '../../../bin/hearth.js');
const ROUNDS = 3;
const PARALLEL = 10;

interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `hearth ...args` in a child process, asynchronously (spawnSync would run them one after the other). */
function cli(args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

describe('hearth keys create, ten at once, while the server writes', () => {
  let hearth: HearthProcess;
  beforeAll(async () => {
    hearth = await startHearthProcess({
      args: instantModelArgs(await tinyChatModel(), { 'model-id': 'local/tiny-chat', front: 'off' }),
    });
    await hearth.waitReady();
  });
  afterAll(async () => {
    await hearth?.stop();
  });

  const authorized = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

  /**
   * One request of the server's own writes, which must answer `status`. Anything else (another status, or no
   * answer: a connection closed under it) throws with the evidence: whether the server process is still running,
   * and the end of its log.
   */
  async function serverCall(url: string, body: unknown, status: number): Promise<void> {
    let answer: string;
    try {
      const r = await fetch(`${hearth.baseUrl}${url}`, {
        method: 'POST',
        headers: authorized(hearth.key),
        body: JSON.stringify(body),
      });
      if (r.status === status) return;
      answer = `answered ${r.status} ${await r.text()}`;
    } catch (e) {
      answer = `had no answer (${String(e)}${e instanceof Error && e.cause ? `: ${String(e.cause)}` : ''})`;
    }
    const { exitCode, signalCode } = hearth.proc;
    const state = exitCode === null && signalCode === null ? 'running' : `exited (${exitCode ?? signalCode})`;
    const log = hearth.logs().split('\n').slice(-30).join('\n');
    throw new Error(`POST ${url} ${answer}; the server is ${state}; its log ends:\n${log}`);
  }

  /** The server's own writes until `stop()`: a key through the API, then a chat completion (its last use), in turn. */
  function serverWrites(): { stop: () => Promise<number> } {
    let running = true;
    let writes = 0;
    const loop = (async () => {
      while (running) {
        await serverCall('/api/v1/keys', { name: `api-${writes}` }, 201);
        const chat = { model: 'local/tiny-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
        await serverCall('/api/inference/v1/chat/completions', chat, 200);
        writes += 2;
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        return writes;
      },
    };
  }

  it(`${ROUNDS} rounds of ${PARALLEL} parallel CLI writes all succeed, each key usable at once`, async () => {
    const keys: Array<{ id: string; key: string }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const writer = serverWrites();
      const runs = await Promise.all(
        Array.from({ length: PARALLEL }, (_, i) =>
          cli(['keys', 'create', '--name', `cli-${round}-${i}`, '--data-dir', hearth.dataDir, '--json']),
        ),
      );
      expect(await writer.stop()).toBeGreaterThan(0);
      for (const r of runs) {
        // Exit 0 with its key. (stderr may hold lmdb-js's own diagnostic lines of a commit it failed and Hearth ran
        // again: HearthStore.transaction; they are shown here when the run fails.)
        expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: 0, signal: null });
        keys.push(JSON.parse(r.stdout) as { id: string; key: string });
      }
    }
    expect(new Set(keys.map((k) => k.id)).size).toBe(ROUNDS * PARALLEL);
    for (const { key } of keys)
      expect((await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: authorized(key) })).status).toBe(200);
    const listed = hearthCli(['keys', 'list', '--data-dir', hearth.dataDir, '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    const ids = new Set((JSON.parse(listed.stdout) as Array<{ id: string }>).map((k) => k.id));
    for (const { id } of keys) expect(ids.has(id)).toBe(true);
  }, 300_000);
});
