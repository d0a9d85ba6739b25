import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelMetadata } from '../../../src/engine/model-metadata.ts';
import { startFakeModelHub, type FakeModelHub } from '../../fakes/fake-model-hub.ts';
import {
  type HearthProcess,
  startHearthProcess,
  createUser as createHearthUser,
} from '../../helpers/hearth-process.ts';
import { until } from '../../helpers/management-client.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Several models on one server (contract.md; docs/models.md), on real `hearth serve` processes with the tiny
 * chat model under several ids (the instant engine: loads and answers without model math): routing by the
 * request's model on every inference route, load on demand, one load for concurrent first requests, LRU eviction
 * under --max-loaded-models and under the memory budget, idle unload, and the owners' models admin API (add from
 * the models dir, pull with progress, a failed pull, remove; members only list).
 */
const started: HearthProcess[] = [];
afterAll(async () => {
  await Promise.all(started.map((h) => h.stop()));
});

async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<HearthProcess> {
  const h = await startHearthProcess({ args: ['--engine', 'instant', '--slots', '2', ...args], env });
  started.push(h);
  await h.waitReady();
  return h;
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(
  h: HearthProcess,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const r = await fetch(`${h.baseUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${h.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null };
}

const chat = (h: HearthProcess, model: string) =>
  call(h, 'POST', '/api/inference/v1/chat/completions', {
    model,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
const states = async (h: HearthProcess) =>
  Object.fromEntries(
    (
      (await call(h, 'GET', '/api/inference/v1/models')).body.data as Array<{ id: string; hearth: { state: string } }>
    ).map((m) => [m.id, m.hearth.state]),
  );
async function metric(h: HearthProcess, line: RegExp): Promise<number | null> {
  const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
  const m = new RegExp(`^${line.source} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}
const loads = (h: HearthProcess, id: string) =>
  metric(h, new RegExp(`hearth_model_loads_total\\{model="${id.replace('/', '\\/')}"\\}`));
const unloads = (h: HearthProcess, id: string, reason: string) =>
  metric(h, new RegExp(`hearth_model_unloads_total\\{model="${id.replace('/', '\\/')}",reason="${reason}"\\}`));

describe('three models, at most two loaded', () => {
  let h: HearthProcess;
  beforeAll(async () => {
    const file = await tinyChatModel();
    h = await serve([
      '--model',
      `${file},id=local/a`,
      '--model',
      `${file},id=local/b`,
      '--model',
      `${file},id=local/c,slots=1`,
      '--max-loaded-models',
      '2',
    ]);
  }, 60_000);

  it('lists every model with its state: the first loaded at start, the others unloaded', async () => {
    const list = (await call(h, 'GET', '/api/inference/v1/models')).body;
    expect(list.data.map((m: { id: string }) => m.id)).toEqual(['local/a', 'local/b', 'local/c']);
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/b': 'unloaded', 'local/c': 'unloaded' });
    expect((await call(h, 'GET', '/api/inference/v1/models/local%2Fc')).body).toMatchObject({
      id: 'local/c',
      hearth: { state: 'unloaded' },
    });
  });

  it("an unknown model is 404 model_not_found naming model on every inference route, in its API's shape", async () => {
    const model = 'local/nope';
    for (const [url, body] of [
      ['/api/inference/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }],
      ['/api/inference/v1/responses', { model, input: 'hi' }],
      ['/api/inference/v1/completions', { model, prompt: 'hi' }],
      ['/api/inference/v1/embeddings', { model, input: 'hi' }],
    ] as const) {
      const r = await call(h, 'POST', url, body);
      expect([url, r.status]).toEqual([url, 404]);
      expect(r.body.error).toMatchObject({ code: 'model_not_found', param: 'model', type: 'not_found_error' });
    }
    for (const [url, body] of [
      ['/api/inference/v1/messages', { model, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }],
      ['/api/inference/v1/messages/count_tokens', { model, messages: [{ role: 'user', content: 'hi' }] }],
    ] as const) {
      const r = await call(h, 'POST', url, body);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({
        type: 'error',
        error: { type: 'not_found_error', code: 'model_not_found', param: 'model' },
      });
    }
    expect((await call(h, 'GET', '/api/inference/v1/models/local%2Fnope')).status).toBe(404);
  });

  it('routes by model and loads an unloaded one on demand', async () => {
    const r = await chat(h, 'local/b');
    expect(r.status).toBe(200);
    expect(r.body.model).toBe('local/b');
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/b': 'ready', 'local/c': 'unloaded' });
    expect(await loads(h, 'local/b')).toBe(1);
  });

  it('concurrent first requests for an unloaded model load it once; the least recently used model makes room', async () => {
    const answers = await Promise.all([1, 2, 3, 4].map(() => chat(h, 'local/c')));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.every((a) => a.body.model === 'local/c')).toBe(true);
    expect(await loads(h, 'local/c')).toBe(1);
    // a was loaded at start and never asked for since: it goes, b (used) stays.
    expect(await states(h)).toEqual({ 'local/a': 'unloaded', 'local/b': 'ready', 'local/c': 'ready' });
    expect(await unloads(h, 'local/a', 'max_loaded')).toBe(1);
  });

  it('every inference route routes by model (completions, responses, messages, embeddings)', async () => {
    const completion = await call(h, 'POST', '/api/inference/v1/completions', {
      model: 'local/a',
      prompt: 'hi',
      max_tokens: 2,
    });
    expect([completion.status, completion.body.model]).toEqual([200, 'local/a']);
    // a came back; b was used before c: b made room.
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/b': 'unloaded', 'local/c': 'ready' });
    const response = await call(h, 'POST', '/api/inference/v1/responses', {
      model: 'local/c',
      input: 'hi',
      max_output_tokens: 16,
    });
    expect([response.status, response.body.model]).toEqual([200, 'local/c']);
    const message = await call(h, 'POST', '/api/inference/v1/messages', {
      model: 'local/a',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect([message.status, message.body.model]).toEqual([200, 'local/a']);
    const embedding = await call(h, 'POST', '/api/inference/v1/embeddings', { model: 'local/b', input: 'hi' });
    expect([embedding.status, embedding.body.model]).toEqual([200, 'local/b']);
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/b': 'ready', 'local/c': 'unloaded' });
    expect(await metric(h, /hearth_model_state\{model="local\/c",state="unloaded"\}/)).toBe(1);
  });
});

describe('the memory budget', () => {
  it('unloads the least recently used model when the next one would not fit', async () => {
    const file = await tinyChatModel();
    // Each model's estimate: its file plus the KV cache of its slots (64 x 1024 tokens here); the budget holds one and a half.
    const md = await readModelMetadata(file);
    const estimate = fs.statSync(file).size + md.kvBytesPerToken! * 1024 * 64;
    const budgetMiB = Math.floor((estimate * 1.5) / (1 << 20));
    expect(budgetMiB * (1 << 20)).toBeGreaterThan(estimate);
    const h = await serve([
      '--model',
      `${file},id=local/a,slots=64`,
      '--model',
      `${file},id=local/b,slots=64`,
      '--context-size',
      '1024',
      '--model-memory-mib',
      String(budgetMiB),
    ]);
    expect((await chat(h, 'local/b')).status).toBe(200);
    expect(await states(h)).toEqual({ 'local/a': 'unloaded', 'local/b': 'ready' });
    expect(await unloads(h, 'local/a', 'memory')).toBe(1);
    // Counted for its estimate, or for what its load measured when more (models.md).
    expect(await metric(h, /hearth_model_memory_bytes\{model="local\/b"\}/)).toBeGreaterThanOrEqual(estimate);
    expect((await chat(h, 'local/a')).status).toBe(200);
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/b': 'unloaded' });
    await h.stop();
  }, 60_000);
});

describe('--idle-unload-s', () => {
  it('unloads a model nobody used, and loads it again on the next request', async () => {
    const file = await tinyChatModel();
    const h = await serve(['--model', `${file},id=local/a`, '--model', `${file},id=local/b`, '--idle-unload-s', '1']);
    expect((await chat(h, 'local/b')).status).toBe(200);
    await until(async () => (await unloads(h, 'local/b', 'idle')) === 1, 'b unloaded as idle', { timeoutMs: 20_000 });
    expect((await states(h))['local/b']).toBe('unloaded');
    // /health stays 200 with the default model unloaded as idle: the next request loads it.
    await until(async () => (await unloads(h, 'local/a', 'idle')) === 1, 'a unloaded as idle', { timeoutMs: 20_000 });
    expect((await fetch(`${h.baseUrl}/health`)).status).toBe(200);
    const again = await chat(h, 'local/b');
    expect([again.status, again.body.model]).toEqual([200, 'local/b']);
    expect(await loads(h, 'local/b')).toBe(2);
    await h.stop();
  }, 60_000);
});

describe('the models admin API', () => {
  const OWNER = { email: 'owner@example.com', password: 'owner password 1' };
  const MEMBER = { email: 'member@example.com', password: 'member password 1' };
  let h: HearthProcess;
  let hub: FakeModelHub;
  let modelsDir: string;
  let outside: string;
  let owner: Record<string, string>;
  let member: Record<string, string>;

  const signIn = async (who: { email: string; password: string }) => {
    const r = await fetch(`${h.baseUrl}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: h.baseUrl },
      body: JSON.stringify(who),
    });
    expect(r.status).toBe(204);
    const cookie = r.headers
      .getSetCookie()
      .find((c) => c.startsWith('hearth_session='))!
      .split(';')[0]!;
    return { cookie, origin: h.baseUrl, authorization: '' };
  };
  const createUser = (who: { email: string; password: string }, role: string) => {
    const made = createHearthUser(h.dataDir, who, role);
    expect(made.status, made.stderr).toBe(0);
  };

  beforeAll(async () => {
    const file = await tinyChatModel();
    hub = await startFakeModelHub({ filePath: file, heldAfterBytes: Math.floor(fs.statSync(file).size / 2) });
    modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-outside-'));
    fs.copyFileSync(file, path.join(modelsDir, 'added.gguf'));
    fs.copyFileSync(file, path.join(outside, 'secret.gguf'));
    fs.symlinkSync(path.join(outside, 'secret.gguf'), path.join(modelsDir, 'link.gguf'));
    fs.writeFileSync(path.join(modelsDir, 'notes.gguf'), 'not a model');
    // The pull stalls halfway, and the test's next requests (a chat, the follow stream) must reach it before the
    // stall time-out fails it: 5 s leaves room for a loaded machine.
    h = await serve(['--model', `${file},id=local/a`, '--models-dir', modelsDir, '--pull-stall-timeout-ms', '5000'], {
      HF_ENDPOINT: hub.endpoint,
    });
    createUser(OWNER, 'owner');
    createUser(MEMBER, 'member');
    owner = await signIn(OWNER);
    member = await signIn(MEMBER);
  }, 60_000);
  afterAll(async () => {
    await hub.close();
    fs.rmSync(modelsDir, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it('members list the models but cannot add, remove, load or unload them', async () => {
    const list = await call(h, 'GET', '/api/v1/models', undefined, member);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id: 'local/a', state: 'ready' })]);
    for (const [method, url, body] of [
      ['POST', '/api/v1/models', { source: 'added.gguf' }],
      ['DELETE', '/api/v1/models/local/a'],
      ['POST', '/api/v1/models/local/a/unload'],
      ['POST', '/api/v1/models/local/a/load'],
    ] as const) {
      const r = await call(h, method, url, body, member);
      expect([method, url, r.status, r.body.error.code]).toEqual([method, url, 403, 'owner_required']);
      const byKey = await call(h, method, url, body); // an API key is no owner either
      expect(byKey.status).toBe(403);
    }
  });

  it('refuses a path outside the models dir, a link out of it, a file that is no GGUF and a URL', async () => {
    for (const source of [
      path.join(outside, 'secret.gguf'),
      '../' + path.basename(outside) + '/secret.gguf',
      'link.gguf',
      '/etc/passwd',
      'notes.gguf',
      'missing.gguf',
      'https://example.com/m.gguf',
      'hf:broken',
      '',
      'a\u0000b',
    ]) {
      const r = await call(h, 'POST', '/api/v1/models', { source }, owner);
      expect([source, r.status, r.body.error.param]).toEqual([source, 400, 'source']);
    }
    expect(
      (await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', id: 'no slash' }, owner)).body.error.param,
    ).toBe('id');
    expect((await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', colour: 1 }, owner)).status).toBe(400);
  });

  it('an owner adds a GGUF from the models dir; it serves on demand; unload, load and delete', async () => {
    const added = await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', id: 'local/added' }, owner);
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      id: 'local/added',
      state: 'unloaded',
      source: fs.realpathSync(path.join(modelsDir, 'added.gguf')),
    });
    expect((await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', id: 'local/added' }, owner)).status).toBe(
      409,
    );
    const r = await chat(h, 'local/added');
    expect([r.status, r.body.model]).toEqual([200, 'local/added']);
    const view = (await call(h, 'GET', '/api/v1/models/local%2Fadded', undefined, member)).body;
    expect(view).toMatchObject({ state: 'ready', usage: { requests: 1 } });
    expect(view.memory_bytes).toBeGreaterThan(0);
    expect((await call(h, 'POST', '/api/v1/models/local/added/unload', undefined, owner)).body.state).toBe('unloaded');
    expect((await call(h, 'POST', '/api/v1/models/local/added/load', undefined, owner)).status).toBe(200);
    await until(async () => (await states(h))['local/added'] === 'ready', 'added loaded again');
    expect((await call(h, 'DELETE', '/api/v1/models/local%2Fadded', undefined, owner)).body).toEqual({
      id: 'local/added',
      object: 'model',
      deleted: true,
    });
    expect((await chat(h, 'local/added')).status).toBe(404);
    expect(fs.existsSync(path.join(modelsDir, 'added.gguf'))).toBe(true); // a local file stays the operator's
  });

  it('pulls a hub model with progress (?follow=1), a stalled pull fails with its reason, and a load retries it', async () => {
    const uri = 'hf:someone/tiny-chat-GGUF/tiny-chat.gguf';
    const added = await call(h, 'POST', '/api/v1/models', { source: uri }, owner);
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ id: 'someone/tiny-chat', state: 'pulling', source: uri });
    const during = await chat(h, 'someone/tiny-chat');
    expect([during.status, during.body.error.code, during.headers.get('retry-after')]).toEqual([
      503,
      'model_warming_up',
      '120',
    ]);
    // The follow stream: the view while it changes, until the pull settles (here: failed, the hub holds the second half).
    const r = await fetch(`${h.baseUrl}/api/v1/models/someone/tiny-chat?follow=1`, { headers: member });
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const events = (await r.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)));
    expect(events.some((e) => e.state === 'pulling' && e.pull.percent >= 49)).toBe(true);
    expect(events.at(-1)).toMatchObject({ state: 'failed', error: expect.stringContaining('could not pull') });
    expect((await chat(h, 'someone/tiny-chat')).body.error.code).toBe('model_failed');
    // Removing a model while it is pulled stops the pull.
    const other = await call(h, 'POST', '/api/v1/models', { source: 'hf:someone/other-GGUF/other.gguf' }, owner);
    expect([other.status, other.body.state]).toEqual([201, 'pulling']);
    expect((await call(h, 'DELETE', '/api/v1/models/someone/other', undefined, owner)).status).toBe(200);
    expect((await call(h, 'GET', '/api/v1/models/someone/other', undefined, owner)).status).toBe(404);
    hub.release();
    expect((await call(h, 'POST', '/api/v1/models/someone/tiny-chat/load', undefined, owner)).status).toBe(200);
    await until(async () => (await states(h))['someone/tiny-chat'] === 'ready', 'the pulled model ready', {
      timeoutMs: 30_000,
    });
    expect((await chat(h, 'someone/tiny-chat')).body.model).toBe('someone/tiny-chat');
    expect(fs.readdirSync(modelsDir)).toContain('hf_someone_tiny-chat.gguf');
    expect((await call(h, 'DELETE', '/api/v1/models/someone/tiny-chat', undefined, owner)).status).toBe(200);
    expect(fs.readdirSync(modelsDir)).not.toContain('hf_someone_tiny-chat.gguf');
  }, 60_000);

  it('a model added through the API is served again after a restart (kept in the models dir); a removed one is not', async () => {
    expect((await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', id: 'local/kept' }, owner)).status).toBe(
      201,
    );
    expect((await call(h, 'POST', '/api/v1/models', { source: 'added.gguf', id: 'local/gone' }, owner)).status).toBe(
      201,
    );
    expect((await call(h, 'DELETE', '/api/v1/models/local/gone', undefined, owner)).status).toBe(200);
    const file = await tinyChatModel();
    await h.stop();
    h = await startHearthProcess({
      args: ['--engine', 'instant', '--slots', '2', '--model', `${file},id=local/a`, '--models-dir', modelsDir],
      dataDir: h.dataDir,
      env: { HF_ENDPOINT: hub.endpoint },
    });
    started.push(h);
    await h.waitReady();
    expect(await states(h)).toEqual({ 'local/a': 'ready', 'local/kept': 'unloaded' });
    const r = await chat(h, 'local/kept');
    expect([r.status, r.body.model]).toEqual([200, 'local/kept']);
  }, 60_000);
});
