import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProviderName } from '../../../src/providers/chat-provider.ts';
import { type FakeUpstream, startFakeUpstream } from '../../fakes/index.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { providerHostArgs } from '../../helpers/provider-host.ts';
import { createProject, projectReady, readyWorkspace } from '../../helpers/management-client.ts';

/**
 * Hostile upstreams against the real server (issue 9): an upstream that trickles its answer a byte at a time,
 * one that streams SSE comments forever, one that redirects to another host, and one that echoes the key in
 * an in-stream error. The deadline (--provider-deadline-ms) is short and every read delivers bytes well
 * within --provider-timeout-ms, so only the whole-answer deadline can end the first two. Checked over HTTP:
 * 504 JSON before commit, one error event (no [DONE]) after it, 502 upstream_redirect, and no key anywhere.
 */
const CASES: Array<{ provider: ProviderName; model: string }> = [
  { provider: 'mistral', model: 'mistral-small-latest' },
  { provider: 'anthropic', model: 'claude-3-5-haiku-latest' },
];
const providerKey = (p: ProviderName) => `hostile-${p}-key-0123456789ABCDEF`;
const DEADLINE_MS = 1500;

let hearth: HearthProcess;
const fakes = {} as Record<ProviderName, FakeUpstream>;
let elsewhere: FakeUpstream;
const projects = {} as Record<ProviderName, { projectId: string; token: string }>;

beforeAll(async () => {
  for (const c of CASES) fakes[c.provider] = await startFakeUpstream(c.provider, { apiKey: providerKey(c.provider) });
  elsewhere = await startFakeUpstream('openai');
  hearth = await startHearthProcess({
    args: await providerHostArgs(fakes, { 'provider-timeout-ms': 10000, 'provider-deadline-ms': DEADLINE_MS }),
  });
  const ws = await readyWorkspace(hearth, 'hostile');
  for (const c of CASES) {
    projects[c.provider] = await createProject(hearth, ws, {
      name: c.provider,
      provider: c.provider,
      model: c.model,
      providerApiKey: providerKey(c.provider),
    });
    await projectReady(hearth, ws, projects[c.provider].projectId);
  }
});

afterAll(async () => {
  await hearth?.stop();
  await Promise.all([...Object.values(fakes), elsewhere].map((f) => f?.close()));
});

const chat = (p: ProviderName, stream: boolean) =>
  fetch(`${hearth.baseUrl}/api/v1/inference/${projects[p].projectId}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${projects[p].token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Say hello' }], stream }),
  });
const dataEvents = (text: string) => text.split('\n\n').filter((e) => e.startsWith('data: '));

describe.each(CASES)('hostile $provider upstream, through the real server', (c) => {
  beforeEach(() => {
    fakes[c.provider].reset({ apiKey: providerKey(c.provider) });
    elsewhere.reset();
  });

  it('a JSON answer trickling one byte at a time: 504 deadline_exceeded before commit, the upstream request aborted', async () => {
    fakes[c.provider].script({ kind: 'trickle', intervalMs: 100 });
    const r = await chat(c.provider, false);
    expect(r.status).toBe(504);
    const body = (await r.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type: 'upstream_error', code: 'deadline_exceeded' });
    expect(body.error.message).toContain(c.provider);
    expect((await fakes[c.provider].waitForAbort(5000)).completed).toBe(false);
  });

  it('SSE comments forever after the first piece: the stream ends with one deadline error event and no [DONE]', async () => {
    fakes[c.provider].script({ kind: 'comments-forever', afterPieces: 1, intervalMs: 100 });
    const r = await chat(c.provider, true);
    expect(r.status).toBe(200);
    const events = dataEvents(await r.text());
    expect(JSON.parse(events[0]!.slice(6)).choices[0].delta.role).toBe('assistant');
    expect(events.some((e) => e.includes('"content":"Hello "'))).toBe(true);
    expect(JSON.parse(events.at(-1)!.slice(6))).toMatchObject({
      error: { code: 'deadline_exceeded', type: 'upstream_error' },
    });
    expect(events).not.toContain('data: [DONE]');
    expect((await fakes[c.provider].waitForAbort(5000)).completed).toBe(false);
  });

  it('a 307 to another host: 502 upstream_redirect, and the other host receives nothing (no key)', async () => {
    fakes[c.provider].script({ kind: 'redirect', status: 307, location: `${elsewhere.baseUrl}/chat/completions` });
    const r = await chat(c.provider, true);
    expect(r.status).toBe(502);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('upstream_redirect');
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('an in-stream error quoting the key never shows it to the client', async () => {
    fakes[c.provider].script({
      kind: 'stream-error',
      afterPieces: 1,
      message: `Unauthorized key ${providerKey(c.provider)}`,
    });
    const text = await (await chat(c.provider, true)).text();
    expect(dataEvents(text).at(-1)).toContain('Unauthorized key');
    expect(text).not.toContain(providerKey(c.provider));
    expect(text).not.toContain('0123456789ABCDEF');
  });
});

describe('the server after hostile upstreams', () => {
  it('still answers a normal project call', async () => {
    const r = await chat('mistral', false);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(
      'Hello from the fake upstream.',
    );
  });
});
