import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProviderName } from '../../../src/providers/chat-provider.ts';
import { type FakeUpstream, startFakeUpstream } from '../../fakes/index.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { postJson } from '../../helpers/held-stream.ts';
import { providerHostArgs } from '../../helpers/provider-host.ts';
import { callApi, createProject, projectReady, readyWorkspace } from '../../helpers/management-client.ts';
import { secretPart } from '../../helpers/credentials.ts';

/**
 * The per-project endpoint end to end: the official `openai` SDK, unchanged, against
 * `{base}/api/v1/inference/{projectId}` with the project token, for projects of all four providers, each
 * provider pointed at its local fake (which speaks the vendor's real wire format and checks its key).
 */
const CASES: Array<{ provider: ProviderName; model: string }> = [
  { provider: 'openai', model: 'gpt-4o-mini' },
  { provider: 'anthropic', model: 'claude-3-5-haiku-latest' },
  { provider: 'gemini', model: 'gemini-2.0-flash' },
  { provider: 'mistral', model: 'mistral-small-latest' },
];
/** Keys no log redaction pattern would catch: the test proves they are never logged at all. */
const providerKey = (p: ProviderName) => `prov-${p}-key-0123456789-${p.slice(0, 4).toUpperCase()}`;
const REPLY = 'The upstream says hello in several words.';

interface Project {
  projectId: string;
  token: string;
}

let hearth: HearthProcess;
let ws: string;
const fakes = {} as Record<ProviderName, FakeUpstream>;
const good = {} as Record<ProviderName, Project>;
const badKey = {} as Record<ProviderName, Project>;

beforeAll(async () => {
  for (const c of CASES)
    fakes[c.provider] = await startFakeUpstream(c.provider, {
      apiKey: providerKey(c.provider),
      reply: { text: REPLY },
    });
  hearth = await startHearthProcess({
    // No retries: an abort seen within 10 s can only come from the client.
    args: await providerHostArgs(fakes, { 'provider-timeout-ms': 60000 }),
  });
  ws = await readyWorkspace(hearth, 'sdk');
  for (const c of CASES) {
    const create = (key: string) =>
      createProject(hearth, ws, {
        name: `${c.provider} bot`,
        provider: c.provider,
        model: c.model,
        providerApiKey: key,
        temperature: 0.4,
      });
    good[c.provider] = await create(providerKey(c.provider));
    badKey[c.provider] = await create(`wrong-${c.provider}-key-9876543210`);
  }
  for (const p of [...Object.values(good), ...Object.values(badKey)]) await projectReady(hearth, ws, p.projectId);
});

afterAll(async () => {
  await hearth?.stop();
  await Promise.all(Object.values(fakes).map((f) => f.close()));
});

const client = (p: Project) =>
  new OpenAI({ apiKey: p.token, baseURL: `${hearth.baseUrl}/api/v1/inference/${p.projectId}`, maxRetries: 0 });
const messages = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'Say hello' },
];

describe.each(CASES)('a $provider project through the official openai SDK', (c) => {
  beforeEach(() => {
    fakes[c.provider].reset({ apiKey: providerKey(c.provider), reply: { text: REPLY } });
  });

  it('answers a JSON completion with the project model and default temperature', async () => {
    const r = await client(good[c.provider]).chat.completions.create({ model: c.model, messages });
    expect(r.object).toBe('chat.completion');
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.model).toBe(c.model);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: REPLY });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    const sent = fakes[c.provider].lastRequest();
    expect(sent).toMatchObject({ model: c.model, stream: false, system: 'Be brief.', temperature: 0.4 });
    expect(sent.messages).toEqual([{ role: 'user', content: 'Say hello' }]);
  });

  it('streams chunks that reassemble to the reply, role first, usage last', async () => {
    const stream = await client(good[c.provider]).chat.completions.create({
      model: c.model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.9,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join('')).toBe(REPLY);
    expect(chunks.find((ch) => ch.choices[0]?.finish_reason)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage!.completion_tokens).toBeGreaterThan(0);
    expect(new Set(chunks.map((ch) => ch.id)).size).toBe(1);
    expect(fakes[c.provider].lastRequest()).toMatchObject({ model: c.model, stream: true, temperature: 0.9 });
  });

  it("an upstream 401 (the project's provider key is wrong) is a 502 naming the provider, JSON and streaming", async () => {
    const sdk = client(badKey[c.provider]);
    for (const stream of [false, true]) {
      const err = await (
        stream
          ? sdk.chat.completions.create({ model: c.model, messages, stream: true }).then(async (s) => {
              for await (const _ of s) {
                /* drain */
              }
            })
          : sdk.chat.completions.create({ model: c.model, messages })
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      const apiError = err as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(502);
      expect(apiError.message).toContain(c.provider);
      expect(apiError.message).not.toContain('wrong-');
      expect(fakes[c.provider].requests.at(-1)!.outcome).toBe('unauthorized');
    }
  });

  it('a client that disconnects mid-stream aborts the upstream call', async () => {
    const fake = fakes[c.provider];
    fake.script({ kind: 'stall-mid-stream', afterPieces: 1 });
    const p = good[c.provider];
    await new Promise<void>((resolve, reject) => {
      const url = `${hearth.baseUrl}/api/v1/inference/${p.projectId}/chat/completions`;
      const req = postJson(url, p.token, { model: c.model, messages, stream: true });
      req.on('response', (res) => {
        expect(res.statusCode).toBe(200);
        res.on('data', (d: Buffer) => {
          if (d.toString().includes('data: ')) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', () => {});
      setTimeout(() => reject(new Error('no stream data')), 20_000).unref();
    });
    const aborted = await fake.waitForAbort(10_000);
    expect(aborted.completed).toBe(false);
  });
});

describe('a project changed while a call runs on it', () => {
  const CHANGES: Array<[string, (projectId: string) => Promise<unknown>, string]> = [
    [
      'suspended: project_not_ready',
      (id) => callApi(hearth, 'PATCH', `/api/v1/workspaces/${ws}/inference/${id}`, { state: 'suspended' }),
      'project_not_ready',
    ],
    [
      'deleted: invalid_api_key',
      (id) => callApi(hearth, 'DELETE', `/api/v1/workspaces/${ws}/inference/${id}`),
      'invalid_api_key',
    ],
  ];
  it.each(CHANGES)(
    '%s ends its stream with that error and aborts the upstream call',
    async (_, change, code) => {
      const c = CASES[0]!;
      const fake = fakes[c.provider];
      fake.reset({ apiKey: providerKey(c.provider), reply: { text: REPLY } });
      fake.script({ kind: 'stall-mid-stream', afterPieces: 1 }); // without the check, only the 60 s timeout would end it
      const p = await createProject(hearth, ws, {
        name: 'changing',
        provider: c.provider,
        model: c.model,
        providerApiKey: providerKey(c.provider),
      });
      await projectReady(hearth, ws, p.projectId);
      const r = await fetch(`${hearth.baseUrl}/api/v1/inference/${p.projectId}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: c.model, messages, stream: true }),
      });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      let text = new TextDecoder().decode((await reader.read()).value);
      await change(p.projectId);
      for (let next = await reader.read(); !next.done; next = await reader.read())
        text += new TextDecoder().decode(next.value);
      expect(text).toContain(`"code":"${code}"`);
      expect(text).not.toContain('[DONE]');
      expect((await fake.waitForAbort(5_000)).completed).toBe(false);
    },
    15_000,
  );
});

describe('secrets', () => {
  it('no provider key, project token or API key appears in any log line', async () => {
    const logs = hearth.logs();
    expect(logs).toContain('"msg":"provider call failed"'); // the failure paths above did log
    const secrets = [
      hearth.key,
      ...CASES.map((c) => providerKey(c.provider)),
      ...CASES.flatMap((c) => [good[c.provider].token, badKey[c.provider].token]),
      ...CASES.map((c) => `wrong-${c.provider}-key-9876543210`),
    ];
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      expect(logs).not.toContain(secretPart(secret)); // the secret part of a token alone
    }
  });
});
