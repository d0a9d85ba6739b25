import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeModelHub, type FakeModelHub } from '../../fakes/fake-model-hub.ts';
import { type FakeUpstream, providerBaseUrls, startFakeUpstream } from '../../fakes/index.ts';
import { probeAppArchive } from '../../helpers/app-archives.ts';
import { postChat } from '../../helpers/chat-request.ts';
import {
  type HearthProcess,
  instantModelArgs,
  type ServeSettings,
  startHearthProcess,
} from '../../helpers/hearth-process.ts';
import { createProject, mustCall, projectReady, readyWorkspace, until } from '../../helpers/management-client.ts';
import { TINY_CHAT_ON_HUB } from '../../helpers/pulling-server.ts';
import { tinyChatModel, tinyModel } from '../../helpers/test-model.ts';

/**
 * SIGTERM / SIGINT seen the way a service manager sees it: a real `hearth serve` child process, a signal,
 * and the exit code. In every model state (pulling, loading, failed, ready) and with upstream calls or
 * app processes in flight, the child must exit by itself: nothing (workers, sockets, timers, the download,
 * app processes) may keep it alive. The bound is the helper's: a child still alive 15 s after the signal is SIGKILLed, and its exit
 * code is then null, which fails the test. Exit codes: 0 clean, 3 grace expired, 128 + n second signal.
 */
let hearth: HearthProcess | undefined;
let hub: FakeModelHub | undefined;
let upstream: FakeUpstream | undefined;

afterEach(async () => {
  // A clean stop ends the event loop by itself: no state may need the forced-exit watchdog (issue 23, item 6).
  if (hearth) expect(hearth.logs()).not.toMatch(/"msg":"forcing exit"/);
  await hearth?.stop('SIGKILL');
  await hub?.close();
  await upstream?.close();
  hearth = undefined;
  hub = undefined;
  upstream = undefined;
});

/**
 * `hearth serve` arguments: the tiny model as local/instant on the instant engine, then `settings`. The instant
 * engine outruns a test client on a loaded machine: a large stream buffer keeps a slow reader from being dropped
 * (that is backpressure, tested elsewhere).
 */
const instantArgs = async (settings: ServeSettings = {}) =>
  instantModelArgs(await tinyModel(), {
    'model-id': 'local/instant',
    'context-size': 1048576,
    'max-tokens': 1000000,
    'stream-buffer-limit': 256 << 20,
    ...settings,
  });

type Health = { state: string; pull?: { percent: number } };
const health = async (h: HearthProcess): Promise<Health> =>
  (await (await fetch(`${h.baseUrl}/health`)).json()) as Health;

/** A streaming chat request on the shared model for `maxTokens`, read until its first bytes (the stream is running). */
async function runningStream(
  h: HearthProcess,
  maxTokens = 900_000,
): Promise<{ reader: ReadableStreamDefaultReader<Uint8Array>; rest: () => Promise<string> }> {
  const res = await postChat(h, {
    model: 'local/instant',
    messages: [{ role: 'user', content: 'x' }],
    stream: true,
    max_tokens: maxTokens,
    stream_options: { include_usage: true },
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  expect(first.done).toBe(false);
  const decoder = new TextDecoder();
  let text = decoder.decode(first.value, { stream: true });
  return {
    reader,
    rest: async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
      } catch {
        // the server cut the connection
      }
      return text;
    },
  };
}

/** A ready server on the instant engine with `--shutdown-grace-ms graceMs`, a stream running on it, then SIGTERM. */
async function stoppingWithStream(graceMs: number, maxTokens?: number) {
  hearth = await startHearthProcess({
    args: await instantArgs({ 'shutdown-grace-ms': graceMs }),
  });
  await hearth.waitReady();
  const h = hearth;
  const stream = await runningStream(h, maxTokens);
  return { h, stream, exited: h.stop('SIGTERM') };
}

describe('shutdown in every model state', () => {
  it('pulling: the download is aborted, no partial file is taken for the model, exit 0; the next start completes the pull', async () => {
    const file = await tinyChatModel();
    hub = await startFakeModelHub({ filePath: file, heldAfterBytes: Math.floor(fs.statSync(file).size / 2) });
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    const args = ['--model', TINY_CHAT_ON_HUB, '--models-dir', modelsDir, '--shutdown-grace-ms', '10000'];
    hearth = await startHearthProcess({ args, env: { HF_ENDPOINT: hub.endpoint } });
    const h = hearth;
    await until(async () => ((await health(h)).pull?.percent ?? 0) >= 49, 'the pull to stall half-way');
    expect((await health(h)).state).toBe('pulling');

    expect(await h.stop('SIGTERM')).toBe(0);
    expect(h.logs()).toMatch(/"msg":"draining","state":"pulling"/);
    expect(h.logs()).toMatch(/"msg":"stopped","clean":true/);
    expect(h.logs()).not.toMatch(/"msg":"model failed"/);
    // The held half was never written under the model's final name (it would be served as a whole model).
    expect(fs.readdirSync(modelsDir)).not.toContain('hf_someone_tiny-chat.gguf');

    hub.release();
    hearth = await startHearthProcess({ args, env: { HF_ENDPOINT: hub.endpoint }, dataDir: h.dataDir });
    await hearth.waitReady();
    expect(fs.statSync(path.join(modelsDir, 'hf_someone_tiny-chat.gguf')).size).toBe(fs.statSync(file).size);
    expect(await hearth.stop('SIGTERM')).toBe(0);
  });

  it('pulling from a hub that answers 503 to everything: the downloader and its retry timers end with the pull, exit 0 without the watchdog', async () => {
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    // A loopback hub that answers every request 503: the reachability check before the pull passes (an
    // unreachable host fails at once: warm-up.test.ts) and node-llama-cpp's downloader retries on its own timers.
    const dropper = http.createServer((_req, res) => res.writeHead(503).end('busy'));
    await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve));
    const closeDropper = () =>
      new Promise<void>((resolve) => {
        dropper.closeAllConnections();
        dropper.close(() => resolve());
      });
    try {
      hearth = await startHearthProcess({
        args: ['--model', TINY_CHAT_ON_HUB, '--models-dir', modelsDir, '--shutdown-grace-ms', '10000'],
        env: { HF_ENDPOINT: `http://127.0.0.1:${(dropper.address() as net.AddressInfo).port}` },
      });
      const h = hearth;
      expect((await health(h)).state).toBe('pulling');
      await until(async () => /"msg":"pulling model"/.test(h.logs()), 'the pull to start');
      expect(await h.stop('SIGTERM')).toBe(0);
      expect(h.logs()).toMatch(/"msg":"model start abandoned: shutting down"/);
      expect(h.logs()).toMatch(/"msg":"stopped","clean":true/);
      expect(h.logs()).not.toMatch(/"msg":"forcing exit"/);
    } finally {
      await closeDropper();
    }
  });

  it('loading: the model workers are torn down while they load, exit 0', async () => {
    hearth = await startHearthProcess({ args: ['--model', await tinyChatModel(), '--workers', '2'] });
    expect((await health(hearth)).state).toBe('loading');
    expect(await hearth.stop('SIGTERM')).toBe(0);
    expect(hearth.logs()).toMatch(/"msg":"draining","state":"loading"/);
    expect(hearth.logs()).toMatch(/"msg":"stopped","clean":true/);
  });

  it('a signal while Hearth is still starting: it finishes starting, then shuts down cleanly (never the default instant death)', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-test-'));
    const bin = path.resolve(import.meta.dirname, '../../../bin/hearth.js');
    const child = spawn(
      process.execPath,
      [bin, 'serve', '--port', '0', '--data-dir', dataDir, ...(await instantArgs())],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let logs = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.stderr!.on('data', (d: Buffer) => {
      if (logs === '') child.kill('SIGTERM'); // at its first log line: the master key file, before the store and the server
      logs += d.toString();
    });
    const code = await exited;
    clearTimeout(killer);
    expect(code).toBe(0);
    expect(logs).toMatch(/"msg":"shutting down","signal":"SIGTERM"/);
    expect(logs).toMatch(/"msg":"stopped","clean":true/);
  });

  it('failed: exit 0', async () => {
    const bogus = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bad-')), 'broken.gguf');
    // The GGUF magic and nothing valid after it: past serve's start check, it fails to load (a file that is
    // not a GGUF at all stops serve at start instead: warm-up.test.ts).
    fs.writeFileSync(bogus, 'GGUF and then not a model');
    hearth = await startHearthProcess({ args: ['--model', bogus] });
    const h = hearth;
    await until(async () => (await health(h)).state === 'failed', 'the failed state');
    expect(await h.stop('SIGINT')).toBe(0);
    expect(h.logs()).toMatch(/"msg":"draining","state":"failed"/);
  });

  it('ready on the default engine (native loop where built): the model workers and their native threads stop, exit 0', async () => {
    hearth = await startHearthProcess({ args: ['--model', await tinyChatModel(), '--model-id', 'local/tiny-chat'] });
    await hearth.waitReady();
    const r = await postChat(hearth, {
      model: 'local/tiny-chat',
      messages: [{ role: 'user', content: 'Say hello.' }],
      max_tokens: 8,
    });
    expect(r.status).toBe(200);
    expect(await hearth.stop('SIGTERM')).toBe(0);
    expect(hearth.logs()).toMatch(/"msg":"stopped","clean":true/);
  });

  it('ready: a running stream finishes within the grace period, then exit 0', async () => {
    const { h, stream, exited } = await stoppingWithStream(30_000, 50_000);
    const text = await stream.rest();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text).toContain('"completion_tokens":50000');
    expect(await exited).toBe(0);
    expect(h.logs()).toMatch(/"msg":"stopped","clean":true/);
  });

  it('ready: new requests during the grace period get 503 shutting_down', async () => {
    const { h, stream, exited } = await stoppingWithStream(30_000);
    await until(async () => /"msg":"draining"/.test(h.logs()), 'shutdown to begin');
    // The same keep-alive pool as the stream's connection is not guaranteed; a fresh connection may be refused instead.
    const r = await fetch(`${h.baseUrl}/api/inference/v1/models`, {
      headers: { authorization: `Bearer ${h.key}` },
    }).catch(() => null);
    if (r) {
      expect(r.status).toBe(503);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('shutting_down');
    }
    await stream.reader.cancel();
    expect(await exited).toBe(0);
  });

  it('ready: when the grace period expires, running streams are cut and the exit code says so (3)', async () => {
    const { h, stream, exited } = await stoppingWithStream(500);
    // The client reads nothing more until Hearth has exited: its stream (900k tokens) cannot end within the grace
    // period however fast the engine runs, so it is still running when the period expires.
    expect(await exited).toBe(3);
    const text = await stream.rest();
    expect(text).not.toContain('data: [DONE]');
    expect(h.logs()).toMatch(/"msg":"grace period expired: cutting requests still running","requests":1/);
    expect(h.logs()).toMatch(/"msg":"stopped","clean":false,"cutRequests":1/);
  });

  it('a second signal exits at once (128 + the signal number)', async () => {
    const { h, stream, exited } = await stoppingWithStream(60_000);
    await until(async () => /"msg":"draining"/.test(h.logs()), 'shutdown to begin');
    h.proc.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(h.logs()).toMatch(/"msg":"second signal: exiting at once","signal":"SIGINT"/);
    await stream.rest();
  });

  it('upstream calls in flight: a project request to a silent upstream is cut after the grace period and aborted upstream', async () => {
    upstream = await startFakeUpstream('openai', { apiKey: 'prov-openai-key-0123456789' });
    hearth = await startHearthProcess({
      args: await instantArgs({
        ...providerBaseUrls({ openai: upstream }),
        'provider-timeout-ms': 600000,
        'provider-max-retries': 0,
        'shutdown-grace-ms': 500,
      }),
    });
    const h = hearth;
    const ws = await readyWorkspace(h, 'shutdown');
    const project = await createProject(h, ws, {
      name: 'bot',
      provider: 'openai',
      model: 'gpt-4o-mini',
      providerApiKey: 'prov-openai-key-0123456789',
    });
    await projectReady(h, ws, project.projectId);

    upstream.script({ kind: 'stall' });
    const call = fetch(`${h.baseUrl}/api/v1/inference/${project.projectId}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${project.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    }).then(
      (r) => r.status,
      () => 'cut' as const,
    );
    const u = upstream;
    await until(async () => u.requests.length === 1, 'the upstream call');

    expect(await h.stop('SIGTERM')).toBe(3);
    // Cut: the connection closed without an answer (uWS alone, HAProxy 2.6), or the front's own 502 for a server
    // that closed without one (HAProxy 3.0, Debian 13). Never an answer of Hearth's.
    expect(['cut', 502]).toContain(await call);
    await u.waitForAbort(5_000);
    expect(h.logs()).toMatch(/"msg":"stopped","clean":false,"cutRequests":1/);
  });

  it('app processes: a request proxied to a live app is cut after the grace period, the app process is stopped, exit 3', async () => {
    hearth = await startHearthProcess({
      args: await instantArgs({ 'app-start-timeout': 10, 'app-grace-period': 1, 'shutdown-grace-ms': 500 }),
    });
    const h = hearth;
    const ws = await readyWorkspace(h, 'apps');
    const { appId } = await mustCall<{ appId: string }>(h, 'POST', `/api/v1/workspaces/${ws}/apps`, { name: 'probe' });
    const { deploymentId } = await mustCall<{ deploymentId: string }>(
      h,
      'POST',
      `/api/v1/workspaces/${ws}/apps/${appId}/deployments`,
      probeAppArchive({ version: 'v1', healthy: true }),
      { contentType: 'application/gzip' },
    );
    let state = '';
    await until(async () => {
      state = (
        await mustCall<{ state: string }>(
          h,
          'GET',
          `/api/v1/workspaces/${ws}/apps/${appId}/deployments/${deploymentId}`,
        )
      ).state;
      return state === 'live' || state === 'failed';
    }, 'the deployment to settle');
    expect(state).toBe('live');
    const appPort = ((await (await fetch(`${h.baseUrl}/apps/${appId}/whoami`)).json()) as { env: { PORT: string } }).env
      .PORT;
    expect(await fetch(`http://127.0.0.1:${appPort}/health`).then((r) => r.status)).toBe(200); // the app process itself

    const hang = await fetch(`${h.baseUrl}/apps/${appId}/hang`);
    const reader = hang.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('first');
    expect(await h.stop('SIGTERM')).toBe(3);
    expect(h.logs()).toMatch(/"msg":"stopped","clean":false,"cutRequests":1/);
    expect(
      await reader.read().then(
        (r) => r.done,
        () => true,
      ),
    ).toBe(true); // the proxied answer ended (or was reset): cut
    await expect(fetch(`http://127.0.0.1:${appPort}/health`)).rejects.toThrow(); // the app process is gone
  });
});
