import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeModelHub, type FakeModelHub } from '../fakes/fake-model-hub.ts';
import { type HearthProcess, startHearthProcess } from '../helpers/hearth-process.ts';
import { tinyChatModel } from '../helpers/test-model.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Warming up and pull failure, with the hub replaced by a local fake (HF_ENDPOINT). */
let hearth: HearthProcess | undefined;
let hub: FakeModelHub | undefined;

afterEach(async () => {
  await hearth?.stop();
  await hub?.close();
  hearth = undefined;
  hub = undefined;
});

const MODEL_URI = 'hf:someone/tiny-chat-GGUF/tiny-chat.gguf';

describe('warming up', () => {
  it('answers 503 model_warming_up with Retry-After and progress while pulling, then serves', async () => {
    const file = await tinyChatModel();
    hub = await startFakeModelHub({ filePath: file, heldAfterBytes: Math.floor(fs.statSync(file).size / 2) });
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    hearth = await startHearthProcess({ args: ['--model', MODEL_URI, '--models-dir', modelsDir], env: { HF_ENDPOINT: hub.endpoint } });
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

    const raw = await fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(raw.status).toBe(503);
    expect(raw.headers.get('retry-after')).toBe('120');
    const body = (await raw.json()) as { error: { code: string; state: string; progress: number } };
    expect(body.error.code).toBe('model_warming_up');
    expect(body.error.state).toBe('pulling');
    expect(body.error.progress).toBeGreaterThanOrEqual(49);

    const sdkError = await client.chat.completions.create({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(sdkError).toBeInstanceOf(OpenAI.APIError);
    expect((sdkError as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    const embedError = await client.embeddings.create({ model: 'someone/tiny-chat', input: 'hi' }).catch((e: unknown) => e);
    expect(embedError).toMatchObject({ status: 503, code: 'model_warming_up' });

    hub.release();
    await hearth.waitReady();
    const r = await client.chat.completions.create({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }], temperature: 0 });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(fs.readdirSync(modelsDir)).toContain('hf_someone_tiny-chat.gguf');
  });

  it('a failed pull is a permanent, explained failed state, never a hang', async () => {
    const file = await tinyChatModel();
    hub = await startFakeModelHub({ filePath: file, mode: 'missing' });
    const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-'));
    hearth = await startHearthProcess({ args: ['--model', MODEL_URI, '--models-dir', modelsDir], env: { HF_ENDPOINT: hub.endpoint } });
    let health: { state: string; error?: string; hint?: string } = { state: 'pulling' };
    for (let i = 0; i < 600 && health.state !== 'failed'; i++) {
      health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as typeof health;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('failed');
    expect(health.error).toContain('could not pull');
    expect(health.hint).toContain('--model path/to/model.gguf');
    const r = await fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}` },
      body: JSON.stringify({ model: 'someone/tiny-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('model_failed');
    expect(hearth.logs()).toMatch(/"level":"error","msg":"model failed"/);
  });

  it('a file that is not a GGUF is a clear error naming the file', async () => {
    const bogus = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bad-')), 'broken.gguf');
    fs.writeFileSync(bogus, 'this is not a model');
    hearth = await startHearthProcess({ args: ['--model', bogus] });
    let health: { state: string; error?: string } = { state: 'loading' };
    for (let i = 0; i < 200 && health.state !== 'failed'; i++) {
      health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as typeof health;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(health.state).toBe('failed');
    expect(health.error).toContain(bogus);
    expect(health.error).toMatch(/not a GGUF/);
  });
});
