import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeModelHub, type FakeModelHub } from '../../fakes/fake-model-hub.ts';
import { type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { postChat } from '../../helpers/chat-request.ts';
import { TINY_CHAT_ON_HUB, startPullingServer } from '../../helpers/pulling-server.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../helpers/ports.ts';

/** Warming up and pull failure, with the hub replaced by a local fake (HF_ENDPOINT). */
let hearth: HearthProcess | undefined;
let hub: FakeModelHub | undefined;

afterEach(async () => {
  await hearth?.stop();
  await hub?.close();
  hearth = undefined;
  hub = undefined;
});

describe('warming up', () => {
  it('answers 503 model_warming_up with Retry-After and progress while pulling, then serves', async () => {
    const pulling = await startPullingServer();
    ({ hearth, hub } = pulling);
    const { modelsDir } = pulling;
    const client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });

    // Wait until the first half has arrived, so the progress is known.
    let health: { state: string; pull?: { percent: number } } = { state: '' };
    for (let i = 0; i < 200 && !(health.pull && health.pull.percent >= 49); i++) {
      const r = await fetch(`${hearth.baseUrl}/health`);
      expect(r.status).toBe(503);
      health = (await r.json()) as typeof health;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('pulling');

    const raw = await postChat(hearth, { model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(raw.status).toBe(503);
    expect(raw.headers.get('retry-after')).toBe('120');
    const body = (await raw.json()) as { error: { code: string; state: string; progress: number } };
    expect(body.error.code).toBe('model_warming_up');
    expect(body.error.state).toBe('pulling');
    expect(body.error.progress).toBeGreaterThanOrEqual(49);

    const sdkError = await client.chat.completions
      .create({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(sdkError).toBeInstanceOf(OpenAI.APIError);
    expect((sdkError as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    const embedError = await client.embeddings
      .create({ model: 'someone/tiny-chat', input: 'hi' })
      .catch((e: unknown) => e);
    expect(embedError).toMatchObject({ status: 503, code: 'model_warming_up' });

    hub.release();
    await hearth.waitReady();
    const r = await client.chat.completions.create({
      model: 'someone/tiny-chat',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0,
    });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(fs.readdirSync(modelsDir)).toContain('hf_someone_tiny-chat.gguf');
  });

  it('a failed pull is a permanent, explained failed state, never a hang', async () => {
    const file = await tinyChatModel();
    hub = await startFakeModelHub({ filePath: file, mode: 'missing' });
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    hearth = await startHearthProcess({
      args: ['--model', TINY_CHAT_ON_HUB, '--models-dir', modelsDir],
      env: { HF_ENDPOINT: hub.endpoint },
    });
    let health: { state: string; error?: string; hint?: string } = { state: 'pulling' };
    for (let i = 0; i < 600 && health.state !== 'failed'; i++) {
      health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as typeof health;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('failed');
    expect(health.error).toContain('could not pull');
    expect(health.hint).toContain('npm start -- --model path/to/model.gguf');
    const r = await fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}` },
      body: JSON.stringify({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('model_failed');
    expect(hearth.logs()).toMatch(/"level":"error","msg":"model failed"/);
  });

  it('a hub whose host cannot be reached fails at once, and /health, chat and the log say why and what to run', async () => {
    // A loopback port nobody listens on: the connection is refused at once, as an offline hub's would be.
    const closed = await freePort(); // free a moment ago: a connection to it is refused
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    hearth = await startHearthProcess({
      args: ['--model', TINY_CHAT_ON_HUB, '--models-dir', modelsDir],
      env: { HF_ENDPOINT: `http://127.0.0.1:${closed}/` },
    });
    let health: { state: string; error?: string; hint?: string; retry_after_seconds?: number } = { state: 'pulling' };
    // Well inside the 30 s stall time-out the pull would otherwise have waited for.
    for (let i = 0; i < 100 && health.state !== 'failed'; i++) {
      health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as typeof health;
      if (health.state !== 'failed') await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('failed');
    expect(health.error).toContain(`cannot reach 127.0.0.1:${closed} (ECONNREFUSED)`);
    expect(health.retry_after_seconds).toBeUndefined();
    expect(health.hint).toContain('npm start -- --model path/to/model.gguf');
    expect(health.hint!.replaceAll('npx hearth ', '')).not.toContain('hearth '); // never the bare `hearth`: not on the PATH after npm ci
    const r = await postChat(hearth, { model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBeNull();
    const body = (await r.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('model_failed');
    expect(body.error.message).toContain(`cannot reach 127.0.0.1:${closed}`);
    const failed = hearth
      .logs()
      .split('\n')
      .find((l) => l.includes('"msg":"model failed"'));
    expect(failed).toContain('npm start -- --model path/to/model.gguf');
  });

  it('a model id the server does not serve is a 404 naming the ids it serves', async () => {
    hearth = await startHearthProcess({ args: ['--model', await tinyChatModel(), '--model-id', 'local/tiny-chat'] });
    const r = await postChat(hearth, { model: 'local/stories260K', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(404);
    const body = (await r.json()) as { error: { code: string; param: string; message: string } };
    expect(body.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect(body.error.message).toBe(
      "The model 'local/stories260K' does not exist; this server serves: local/tiny-chat",
    );
  });

  it('a local GGUF that does not load is a failed state whose hint is about the file, not about pulling', async () => {
    const bogus = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bad-')), 'truncated.gguf');
    fs.writeFileSync(bogus, 'GGUF and then not a model');
    hearth = await startHearthProcess({ args: ['--model', bogus] });
    let health: { state: string; error?: string; hint?: string } = { state: 'loading' };
    for (let i = 0; i < 200 && health.state !== 'failed'; i++) {
      health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as typeof health;
      if (health.state !== 'failed') await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('failed');
    expect(health.error).toContain(bogus);
    expect(health.hint).toMatch(/^The local file did not load: check that it is a llama\.cpp GGUF model/);
    expect(health.hint).not.toContain('instead');
  });

  it('a local model that does not exist or is not a GGUF stops serve at start: exit code 2 and one line naming it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bad-'));
    const bogus = path.join(dir, 'broken.gguf');
    fs.writeFileSync(bogus, 'this is not a model');
    const cases: Array<[string, RegExp]> = [
      [path.join(dir, 'nope.gguf'), /no such file/],
      [bogus, /is not a GGUF file/],
      [dir, /is a directory/],
    ];
    for (const [model, why] of cases) {
      const r = hearthCli(['serve', '--port', '0', '--data-dir', path.join(dir, 'data'), '--model', model]);
      expect(r.status).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`hearth serve: model ${model}: `);
      expect(lines[0]).toMatch(why);
      expect(fs.existsSync(path.join(dir, 'data'))).toBe(false); // stopped before anything was made
    }
  });
});
