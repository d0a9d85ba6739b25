import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel } from '../../../models/test-model-path.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { postJson } from '../../helpers/held-stream.ts';
import { hostToolRuns } from '../../helpers/host-tools.ts';

/**
 * The metrics tell the truth: a server on the tiny chat model gets a known set of requests (JSON,
 * streaming, errors), then every counter in /metrics is compared with what the clients saw: finish
 * reasons, the sum of the usage fields they received, HTTP requests by route and status, histogram
 * counts. A second server (a chat model that never stops) gets a client that disconnects mid-stream.
 * No label may carry a key, token or completion id, /metrics honours --metrics-token, and
 * `promtool check metrics` accepts the exposition (skipped, saying so, where promtool is absent).
 */

const METRICS_TOKEN = 'metrics-token-5d1c9a7e0b3f4e21';
const MODEL = 'local/tiny-chat';
const CHAT = '/api/inference/v1/chat/completions';
/** The latency histograms with one observation per finished request. */
const PER_REQUEST_HISTOGRAMS = [
  'hearth_time_to_first_token_seconds',
  'hearth_e2e_request_latency_seconds',
  'hearth_request_queue_time_seconds',
];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (the subset prom-client writes). */
function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`unparseable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

class Scrape {
  constructor(
    readonly text: string,
    readonly samples = parseExposition(text),
  ) {}

  /** Sum of the samples of `name` whose labels include `labels` (0 when none). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((a, s) => a + s.value, 0);
  }

  series(name: string): Sample[] {
    return this.samples.filter((s) => s.name === name);
  }
}

async function scrape(h: HearthProcess, token?: string): Promise<Scrape> {
  const r = await fetch(`${h.baseUrl}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
  return new Scrape(await r.text());
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}
interface ChatResult {
  finishReason: string;
  usage: Usage;
  content: string;
}

function post(h: HearthProcess, body: unknown, key = h.key): Promise<Response> {
  return fetch(`${h.baseUrl}${CHAT}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function chatJson(h: HearthProcess, extra: Record<string, unknown> = {}, model = MODEL): Promise<ChatResult> {
  const r = await post(h, { model, messages: [{ role: 'user', content: 'Say hello.' }], temperature: 0, ...extra });
  expect(r.status).toBe(200);
  const j = (await r.json()) as {
    choices: Array<{ finish_reason: string; message: { content: string } }>;
    usage: Usage;
  };
  return { finishReason: j.choices[0]!.finish_reason, usage: j.usage, content: j.choices[0]!.message.content };
}

/** A streaming request with include_usage, parsed event by event; checks the stream is complete. */
async function chatStream(h: HearthProcess, extra: Record<string, unknown> = {}): Promise<ChatResult> {
  const r = await post(h, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Say hello.' }],
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toContain('text/event-stream');
  const events = (await r.text())
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  expect(events.at(-1)).toBe('[DONE]');
  const chunks = events.slice(0, -1).map(
    (e) =>
      JSON.parse(e) as {
        choices: Array<{ delta: { content?: string }; finish_reason: string | null }>;
        usage?: Usage;
      },
  );
  const finish = chunks.find((c) => c.choices[0]?.finish_reason);
  const usage = chunks.at(-1)!.usage;
  expect(usage).toBeDefined();
  return {
    finishReason: finish!.choices[0]!.finish_reason!,
    usage: usage!,
    content: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''),
  };
}

/** Label values that must never appear: the whole key, its id and secret, the metrics token, completion ids. */
function assertNoSecretsInLabels(s: Scrape, secrets: string[]): void {
  const allowedLabelNames = new Set([
    'model',
    'finished_reason',
    'route',
    'status',
    'status_class',
    'code',
    'state',
    'provider',
    'outcome',
    'kind',
    'le',
    'reason', // hearth_model_unloads_total: idle, max_loaded, memory, failed, request, removed
    'priority', // hearth_num_requests_*, hearth_generated_tokens_total: interactive, batch
    // prom-client default process/runtime metrics
    'version',
    'major',
    'minor',
    'patch',
    'type',
    'space',
    'quantile',
  ]);
  for (const sample of s.samples) {
    for (const [name, value] of Object.entries(sample.labels)) {
      expect(allowedLabelNames.has(name), `unexpected label ${name} on ${sample.name}`).toBe(true);
      expect(value).not.toMatch(/hk_|hp_|chatcmpl-|Bearer/i);
      for (const secret of secrets)
        expect(value.includes(secret), `${sample.name}{${name}} holds a secret`).toBe(false);
    }
  }
}

const PROMTOOL = hostToolRuns('promtool');
if (!PROMTOOL)
  console.warn(
    'metrics.test.ts: SKIPPING `promtool check metrics`: promtool is not on PATH (apt-get install prometheus; .ci/apt-packages does it in CI)',
  );

describe('metrics match the traffic exactly (tiny chat model)', () => {
  let hearth: HearthProcess;
  const results: ChatResult[] = [];
  let final: Scrape;

  beforeAll(async () => {
    const model = await ensureTinyChatModel();
    hearth = await startHearthProcess({
      args: ['--model', model, '--model-id', MODEL, '--slots', '2', '--metrics-token', METRICS_TOKEN],
    });
    await hearth.waitReady();

    // 4 JSON (2 stop, 2 length) and 3 streaming (2 stop, 1 length), some concurrently. The scripted reply
    // is several tokens long, so max_tokens 1 or 2 always ends it early (length).
    results.push(...(await Promise.all([chatJson(hearth), chatJson(hearth, { max_tokens: 1 })])));
    results.push(await chatJson(hearth, { max_completion_tokens: 2 }));
    results.push(
      await chatJson(hearth, {
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Say hello.' },
        ],
      }),
    );
    results.push(...(await Promise.all([chatStream(hearth), chatStream(hearth, { max_tokens: 2 })])));
    results.push(await chatStream(hearth, { messages: [{ role: 'user', content: 'Hello again, tiny model.' }] }));

    // Errors, one of each kind.
    expect(
      (
        await post(
          hearth,
          { model: MODEL, messages: [{ role: 'user', content: 'x' }] },
          'hk_nosuchkey_aaaaaaaaaaaaaaaaaaaaaaaaaaaa',
        )
      ).status,
    ).toBe(401);
    expect(
      (await post(hearth, { model: MODEL, messages: [{ role: 'user', content: 'x' }], temperature: 3 })).status,
    ).toBe(400);
    expect((await post(hearth, '{"model":')).status).toBe(400);
    expect((await post(hearth, { model: 'local/nope', messages: [{ role: 'user', content: 'x' }] })).status).toBe(404);
    expect((await fetch(`${hearth.baseUrl}/api/inference/v1/nothing`)).status).toBe(404);
    expect(
      (await fetch(`${hearth.baseUrl}${CHAT}`, { headers: { authorization: `Bearer ${hearth.key}` } })).status,
    ).toBe(405);
    expect((await fetch(`${hearth.baseUrl}/api/inference/v1/models`)).status).toBe(401);
    expect(
      (await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${hearth.key}` } }))
        .status,
    ).toBe(200);
    expect((await fetch(`${hearth.baseUrl}/health`)).status).toBe(200);

    final = await scrape(hearth, METRICS_TOKEN);
  });

  afterAll(async () => {
    await hearth?.stop();
  });

  it('sent what it meant to (sanity of the fixture)', () => {
    expect(results.map((r) => r.finishReason)).toEqual(['stop', 'length', 'length', 'stop', 'stop', 'length', 'stop']);
    for (const r of results) expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  it('counts finished requests by finish reason', () => {
    const stop = results.filter((r) => r.finishReason === 'stop').length;
    const length = results.filter((r) => r.finishReason === 'length').length;
    expect(final.sum('hearth_request_success_total', { model: MODEL, finished_reason: 'stop' })).toBe(stop);
    expect(final.sum('hearth_request_success_total', { model: MODEL, finished_reason: 'length' })).toBe(length);
    expect(final.sum('hearth_request_success_total')).toBe(results.length);
  });

  it('token counters equal the sum of the usage the clients received', () => {
    const prompt = results.reduce((a, r) => a + r.usage.prompt_tokens, 0);
    const generated = results.reduce((a, r) => a + r.usage.completion_tokens, 0);
    expect(final.sum('hearth_prompt_tokens_total', { model: MODEL })).toBe(prompt);
    expect(final.sum('hearth_generation_tokens_total', { model: MODEL })).toBe(generated);
    // Every prompt token is a prefix-cache query; hits are a subset (and exist as a series, maybe 0).
    expect(final.sum('hearth_prefix_cache_queries_total', { model: MODEL })).toBe(prompt);
    expect(final.series('hearth_prefix_cache_hits_total')).toHaveLength(1);
    expect(final.sum('hearth_prefix_cache_hits_total')).toBeLessThanOrEqual(prompt);
  });

  it('latency histograms count every finished request once', () => {
    for (const h of PER_REQUEST_HISTOGRAMS) {
      expect(final.sum(`${h}_count`, { model: MODEL }), h).toBe(results.length);
      expect(final.sum(`${h}_bucket`, { model: MODEL, le: '+Inf' }), h).toBe(results.length);
    }
    // One inter-token observation per delivered token after each request's first, however the engine's steps
    // group the tiny model's few tokens (tokens that came with the first count a gap of 0); tokens a stop
    // string swallowed are never delivered, hence at most.
    const itl = final.sum('hearth_inter_token_latency_seconds_count', { model: MODEL });
    expect(itl).toBeLessThanOrEqual(final.sum('hearth_generation_tokens_total') - results.length);
    expect(itl).toBeGreaterThan(0);
  });

  it('gauges are back at rest and show the model ready', () => {
    expect(final.sum('hearth_num_requests_running', { model: MODEL })).toBe(0);
    expect(final.sum('hearth_num_requests_waiting', { model: MODEL })).toBe(0);
    expect(final.sum('hearth_model_state', { model: MODEL, state: 'ready' })).toBe(1);
    expect(final.sum('hearth_model_state', { model: MODEL })).toBe(1);
  });

  it('counts HTTP requests by route and status, and errors by code', () => {
    // Each counter as `<route> <status>` -> count (health: waitReady's first 200, and ours).
    const http: Record<string, number> = {
      'chat_completions 200': results.length,
      'chat_completions 401': 1,
      'chat_completions 400': 2,
      'chat_completions 404': 1,
      'not_found 404': 1,
      'method_not_allowed 405': 1,
      'models 401': 1,
      'models 200': 1,
      'health 200': 2,
    };
    expect(countsOf(final, 'hearth_http_requests_total', ['route', 'status'], Object.keys(http))).toEqual(http);
    expect(final.sum('hearth_http_requests_total', { route: 'metrics' })).toBe(0); // a scrape is counted after it is sent
    const routes = new Set(final.series('hearth_http_requests_total').map((s) => s.labels.route));
    expect([...routes].sort()).toEqual(['chat_completions', 'health', 'method_not_allowed', 'models', 'not_found']);
    // The duration histogram saw the same requests.
    expect(
      final.sum('hearth_http_request_duration_seconds_count', { route: 'chat_completions', status_class: '2xx' }),
    ).toBe(results.length);
    expect(
      final.sum('hearth_http_request_duration_seconds_count', { route: 'chat_completions', status_class: '4xx' }),
    ).toBe(4);

    const errors: Record<string, number> = {
      'chat_completions invalid_api_key': 1,
      'chat_completions invalid_value': 1,
      'chat_completions invalid_json': 1,
      'chat_completions model_not_found': 1,
      'models invalid_api_key': 1,
      'not_found route_not_found': 1,
      'method_not_allowed method_not_allowed': 1,
    };
    expect(countsOf(final, 'hearth_errors_total', ['route', 'code'], Object.keys(errors))).toEqual(errors);
    expect(final.sum('hearth_errors_total')).toBe(7);
  });

  it('no label holds a key, token or id', () => {
    const [, id, secret] = /^hk_([^_]+)_(.+)$/.exec(hearth.key)!;
    assertNoSecretsInLabels(final, [hearth.key, id!, secret!, METRICS_TOKEN]);
    expect(final.text).not.toContain(hearth.key);
    expect(final.text).not.toContain(METRICS_TOKEN);
  });

  it('/metrics requires the bearer when --metrics-token is set', async () => {
    for (const auth of [undefined, 'Bearer wrong-token', `Bearer ${hearth.key}`, METRICS_TOKEN]) {
      const r = await fetch(`${hearth.baseUrl}/metrics`, { headers: auth ? { authorization: auth } : {} });
      expect(r.status, String(auth)).toBe(401);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    }
    const after = await scrape(hearth, METRICS_TOKEN);
    expect(after.sum('hearth_http_requests_total', { route: 'metrics', status: '401' })).toBe(4);
    expect(after.sum('hearth_http_requests_total', { route: 'metrics', status: '200' })).toBe(1);
  });

  it.skipIf(!PROMTOOL)('promtool check metrics accepts the exposition', () => {
    const r = spawnSync('promtool', ['check', 'metrics'], { input: final.text, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('a client that disconnects mid-stream is counted once, as cancelled', () => {
  let hearth: HearthProcess;
  const NEVER_STOPS = 'local/tiny-chat-never-stops';

  beforeAll(async () => {
    // Never emits EOS: only max_tokens or a cancel ends it; a context of 65,536 takes it over 15 s to fill, so the
    // stream still runs when its client leaves (2,048 filled in 1-2 s).
    const model = await ensureTinyChatModel({ reply: null, contextLength: 65_536 });
    hearth = await startHearthProcess({
      args: [
        ...['--model', model, '--model-id', NEVER_STOPS, '--slots', '1'],
        ...['--max-tokens', '100000', '--context-size', '65536'],
      ],
    });
    await hearth.waitReady();
  });

  afterAll(async () => {
    await hearth?.stop();
  });

  /** Streams until `events` content events arrived, then destroys the socket. Returns the events seen. */
  function streamThenDisconnect(events: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = postJson(`${hearth.baseUrl}${CHAT}`, hearth.key, {
        model: NEVER_STOPS,
        messages: [{ role: 'user', content: 'Say hello.' }],
        temperature: 0,
        stream: true,
        max_tokens: 50_000,
      });
      let seen = 0;
      let buffered = '';
      req.on('response', (res) => {
        res.on('data', (d: Buffer) => {
          buffered += d.toString();
          const parts = buffered.split('\n\n');
          buffered = parts.pop()!;
          seen += parts.filter((p) => p.includes('"content":') && !p.includes('"role"')).length;
          if (seen >= events) {
            req.destroy();
            resolve(seen);
          }
        });
      });
      req.on('error', (e) => (seen >= events ? undefined : reject(e)));
    });
  }

  it('counts the cancelled generation, its prompt and the tokens it produced', async () => {
    const calibration = await chatJson(hearth, { max_tokens: 2 }, NEVER_STOPS);
    expect(calibration.finishReason).toBe('length');
    const seen = await streamThenDisconnect(3);

    let s = await scrape(hearth);
    for (let i = 0; i < 100 && s.sum('hearth_request_success_total', { finished_reason: 'cancelled' }) === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await scrape(hearth);
    }
    expect(s.sum('hearth_request_success_total', { model: NEVER_STOPS, finished_reason: 'cancelled' })).toBe(1);
    expect(s.sum('hearth_request_success_total', { model: NEVER_STOPS, finished_reason: 'length' })).toBe(1);
    expect(s.sum('hearth_request_success_total')).toBe(2);
    // Same prompt twice: the cancelled request's prompt tokens equal the calibration's.
    expect(s.sum('hearth_prompt_tokens_total')).toBe(2 * calibration.usage.prompt_tokens);
    const cancelledTokens = s.sum('hearth_generation_tokens_total') - calibration.usage.completion_tokens;
    expect(cancelledTokens).toBeGreaterThanOrEqual(seen);
    expect(cancelledTokens).toBeLessThan(50_000);
    for (const h of ['hearth_time_to_first_token_seconds', 'hearth_e2e_request_latency_seconds'])
      expect(s.sum(`${h}_count`), h).toBe(2);
    expect(s.sum('hearth_num_requests_running')).toBe(0);
    expect(s.sum('hearth_num_requests_waiting')).toBe(0);
    // The stream had committed its 200 before the client left.
    expect(s.sum('hearth_http_requests_total', { route: 'chat_completions', status: '200' })).toBe(2);
    // Without --metrics-token, /metrics is public. A request is counted when it has finished, so the
    // scrapes above show up in the next one.
    s = await scrape(hearth);
    expect(s.sum('hearth_http_requests_total', { route: 'metrics', status: '200' })).toBeGreaterThanOrEqual(1);
  });
});

/** The sums of `metric` for each `"<label value> <label value>"` key, the values in the order of `labels`. */
function countsOf(
  m: { sum(name: string, labels?: Record<string, string>): number },
  metric: string,
  labels: readonly string[],
  keys: readonly string[],
): Record<string, number> {
  return Object.fromEntries(
    keys.map((key) => [key, m.sum(metric, Object.fromEntries(key.split(' ').map((v, i) => [labels[i]!, v])))]),
  );
}
