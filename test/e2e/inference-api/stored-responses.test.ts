import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, createKey } from '../../helpers/hearth-process.ts';
import { stopThenRemove } from '../../helpers/suite-cleanup.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Stored responses (issue #26 item 4) end to end with the official `openai` SDK over a real `hearth serve`
 * (native loop, the tiny chat model): `store` (default true), `previous_response_id` continuing the stored
 * conversation and reusing its prompt cache, `responses.retrieve`, `responses.inputItems.list`,
 * `responses.delete`, another account's id answered as unknown, and the records surviving a restart.
 */
const MODEL_ID = 'local/tiny-chat';
let dataDir: string;
let hearth: HearthProcess;
let client: OpenAI;
let otherAccount: OpenAI;

const clientFor = (h: HearthProcess, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/api/inference/v1`, maxRetries: 0 });
/** A turn that continues the stored response `previousId` with `input`, asked through `c`. */
const nextTurn = (c: OpenAI, previousId: string, input: string, maxOutputTokens: number) =>
  c.responses.create({ model: MODEL_ID, previous_response_id: previousId, input, max_output_tokens: maxOutputTokens });

const start = async () => {
  hearth = await startHearthProcess({
    dataDir,
    args: ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--slots', '2'],
  });
  await hearth.waitReady();
};

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-stored-responses-'));
  const otherKey = createKey(dataDir, 'other', {}, 'acct-other');
  await start();
  client = clientFor(hearth, hearth.key);
  otherAccount = clientFor(hearth, otherKey);
});

afterAll(() => stopThenRemove(hearth, dataDir));

describe('stored responses', () => {
  it('keeps a response by default: retrieve returns it as answered, with its input items', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      instructions: 'Be terse.',
      input: 'Say hello.',
      max_output_tokens: 8,
    });
    expect((r as unknown as { store: boolean }).store).toBe(true);
    const again = await client.responses.retrieve(r.id);
    expect(again).toEqual(r);
    const items = await client.responses.inputItems.list(r.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Say hello.' }],
    });
  });

  it('store: false keeps nothing', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      input: 'Say hello.',
      store: false,
      max_output_tokens: 4,
    });
    expect((r as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404, code: 'response_not_found' });
  });

  it('previous_response_id continues the conversation and reuses its prompt cache', async () => {
    const first = await client.responses.create({
      model: MODEL_ID,
      input: 'Tell me a story about a cat.',
      max_output_tokens: 8,
    });
    const second = await nextTurn(client, first.id, 'And then?', 8);
    expect(second.previous_response_id).toBe(first.id);
    // The second prompt holds the first turn (its input and its output) before the new input ...
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens);
    // ... and the first turn's evaluated prompt is reused, not evaluated again.
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    // A third turn chains through the second.
    const third = await nextTurn(client, second.id, 'The end.', 4);
    expect(third.usage!.input_tokens).toBeGreaterThan(second.usage!.input_tokens);
  });

  it('a streamed response is stored by the time the stream ends', async () => {
    const stream = client.responses.stream({ model: MODEL_ID, input: 'Say hello.', max_output_tokens: 4 });
    const final = await stream.finalResponse();
    expect((await client.responses.retrieve(final.id)).id).toBe(final.id);
  });

  it("another account's response is unknown to a key of this one, for every route", async () => {
    const r = await client.responses.create({ model: MODEL_ID, input: 'Mine.', max_output_tokens: 4 });
    await expect(otherAccount.responses.retrieve(r.id)).rejects.toMatchObject({
      status: 404,
      code: 'response_not_found',
    });
    await expect(otherAccount.responses.inputItems.list(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(otherAccount.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      otherAccount.responses.create({ model: MODEL_ID, previous_response_id: r.id, input: 'x' }),
    ).rejects.toMatchObject({
      status: 404,
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    });
    expect((await client.responses.retrieve(r.id)).id).toBe(r.id); // still there for its owner
  });

  it('delete removes it; the id is then unknown', async () => {
    const r = await client.responses.create({ model: MODEL_ID, input: 'Forget me.', max_output_tokens: 4 });
    await client.responses.delete(r.id);
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      client.responses.create({ model: MODEL_ID, previous_response_id: r.id, input: 'x' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('input items page with limit, order and after', async () => {
    const input = ['one', 'two', 'three'].map((text) => ({ role: 'user' as const, content: text }));
    const r = await client.responses.create({ model: MODEL_ID, input, max_output_tokens: 2 });
    const texts = (data: Array<{ content?: unknown }>) =>
      data.map((i) => (i.content as Array<{ text: string }>)[0]!.text);
    const page = await fetch(`${hearth.baseUrl}/api/inference/v1/responses/${r.id}/input_items?limit=2&order=asc`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    const body = (await page.json()) as {
      data: Array<{ id: string; content: unknown }>;
      has_more: boolean;
      last_id: string;
    };
    expect(texts(body.data)).toEqual(['one', 'two']);
    expect(body.has_more).toBe(true);
    const rest = await fetch(
      `${hearth.baseUrl}/api/inference/v1/responses/${r.id}/input_items?order=asc&after=${body.last_id}`,
      { headers: { authorization: `Bearer ${hearth.key}` } },
    );
    expect(texts(((await rest.json()) as { data: Array<{ content: unknown }> }).data)).toEqual(['three']);
    // The SDK's default order is OpenAI's: newest first.
    expect(texts((await client.responses.inputItems.list(r.id)).data as never)).toEqual(['three', 'two', 'one']);
    const bad = await fetch(`${hearth.baseUrl}/api/inference/v1/responses/${r.id}/input_items?limit=0`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('limit');
  });

  it('stored responses survive a restart', async () => {
    const r = await client.responses.create({ model: MODEL_ID, input: 'Remember me.', max_output_tokens: 4 });
    await hearth.stop();
    await start();
    const after = clientFor(hearth, hearth.key);
    expect((await after.responses.retrieve(r.id)).id).toBe(r.id);
    const next = await nextTurn(after, r.id, 'Still there?', 4);
    expect(next.previous_response_id).toBe(r.id);
  });
});
