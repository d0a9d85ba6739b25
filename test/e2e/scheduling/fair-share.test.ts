import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hearthCli, type HearthProcess } from '../../helpers/hearth-process.ts';
import { serveNeverStopping } from '../../helpers/served-model.ts';
import { callApi, until } from '../../helpers/management-client.ts';
import { holdStream as holdStreamOf } from '../../helpers/held-stream.ts';

/**
 * Fair share and priority between tenants, end to end (contract "Fair share and priority between tenants"): a
 * key's `priority` through the management API and the CLI, a request's `"priority": "batch"` on the four
 * generation endpoints (any other value a 400 naming `priority`), batch streams that hold every slot yielding
 * to an interactive request (which would otherwise wait for ever: this model never stops on its own), one
 * account's queue not holding up another's request, queued batch embeddings (a batch key's) waiting behind an
 * to an interactive request (which would otherwise wait for ever: this model never stops on its own), an
 * account holding every slot giving one to another account's request at once, and the metrics by priority (never an account or key id).
 * Two slots, one worker, the native engine.
 */
let hearth: HearthProcess;
const MODEL = 'local/never-stops';
const LONG_CONTEXT = 65_536;

beforeAll(async () => {
  // Streams hold their slots for a test's length: 65,536 tokens of context take this model over 15 s to fill.
  hearth = await serveNeverStopping(
    MODEL,
    { engine: 'native', 'max-tokens': 100000, 'context-size': LONG_CONTEXT },
    {},
    LONG_CONTEXT,
  );
});

afterAll(async () => {
  await hearth?.stop();
});

type ErrorBody = { error: { message: string; type: string; code: string | null; param: string | null } };

/** `hearth keys create` on the running server's data dir (another account with --account). */
function cliKey(
  name: string,
  extra: string[] = [],
): { key: string; id: string; accountId: string; limits: { priority: string } } {
  const r = hearthCli(['keys', 'create', '--name', name, '--data-dir', hearth.dataDir, '--json', ...extra]);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { key: string; id: string; accountId: string; limits: { priority: string } };
}

async function post(path: string, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await fetch(`${hearth.baseUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> & ErrorBody };
}

const chat = (key: string, maxTokens: number, extra: Record<string, unknown> = {}) =>
  post('/api/inference/v1/chat/completions', key, {
    model: MODEL,
    messages: [{ role: 'user', content: 'go' }],
    max_tokens: maxTokens,
    ...extra,
  });

/** A stream of `key` that never ends by itself; resolves once its first event arrived (it holds a slot then). */
const holdStream = (key: string, extra: Record<string, unknown> = {}) =>
  holdStreamOf(hearth.baseUrl, MODEL, key, extra);

async function metrics(): Promise<string> {
  return (await fetch(`${hearth.baseUrl}/metrics`)).text();
}

function sample(text: string, name: string, labels: Record<string, string>): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Waits until /metrics counts `count` requests of `priority` in `state` (`what` names the wait). */
const untilRequests = (state: 'running' | 'waiting', priority: 'interactive' | 'batch', count: number, what: string) =>
  until(async () => sample(await metrics(), `hearth_num_requests_${state}`, { priority }) === count, what);

describe('priority of keys and requests', () => {
  it("a key's priority: interactive by default, set at creation and by PATCH, null resets it, a bad value is a 400 naming it", async () => {
    const plain = await callApi<{ id: string; limits: Record<string, unknown> }>(hearth, 'POST', '/api/v1/keys', {
      name: 'plain',
    });
    expect(plain.status).toBe(201);
    expect(plain.body.limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    const bulk = await callApi<{ id: string; limits: Record<string, unknown> }>(hearth, 'POST', '/api/v1/keys', {
      name: 'bulk',
      limits: { priority: 'batch', maxConcurrent: 4 },
    });
    expect(bulk.status).toBe(201);
    expect(bulk.body.limits).toMatchObject({ maxConcurrent: 4, priority: 'batch' });
    const patched = await callApi<{ limits: Record<string, unknown> }>(
      hearth,
      'PATCH',
      `/api/v1/keys/${plain.body.id}`,
      { limits: { priority: 'batch' } },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.limits).toMatchObject({ priority: 'batch', requestsPerMinute: null });
    const reset = await callApi<{ limits: Record<string, unknown> }>(hearth, 'PATCH', `/api/v1/keys/${plain.body.id}`, {
      limits: { priority: null },
    });
    expect(reset.body.limits).toMatchObject({ priority: 'interactive' });
    const listed = await callApi<{ data: Array<{ id: string; limits: { priority: string } }> }>(
      hearth,
      'GET',
      '/api/v1/keys',
    );
    expect(listed.body.data.find((k) => k.id === bulk.body.id)?.limits.priority).toBe('batch');
    for (const bad of ['high', 'Batch', 1, true, {}]) {
      const r = await callApi<ErrorBody>(hearth, 'POST', '/api/v1/keys', { name: 'bad', limits: { priority: bad } });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'limits.priority' });
      const p = await callApi<ErrorBody>(hearth, 'PATCH', `/api/v1/keys/${plain.body.id}`, {
        limits: { priority: bad },
      });
      expect(p.status).toBe(400);
      expect(p.body.error.param).toBe('limits.priority');
    }
  });

  it('the CLI creates a batch key (--priority batch) and lists its priority; a bad value is refused', () => {
    const k = cliKey('cli-bulk', ['--priority', 'batch']);
    expect(k.limits.priority).toBe('batch');
    const list = hearthCli(['keys', 'list', '--data-dir', hearth.dataDir]);
    expect(list.stdout).toMatch(new RegExp(`${k.id}\\tcli-bulk\\t.*batch priority`));
    const bad = hearthCli(['keys', 'create', '--name', 'x', '--priority', 'urgent', '--data-dir', hearth.dataDir]);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr + bad.stdout).toMatch(/priority/);
  });

  it('"priority": "batch" is taken by chat completions, completions, responses and messages; any other value is a 400 naming priority', async () => {
    const key = hearth.key;
    const calls: Array<[string, Record<string, unknown>]> = [
      [
        '/api/inference/v1/chat/completions',
        { model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: 2 },
      ],
      ['/api/inference/v1/completions', { model: MODEL, prompt: 'go', max_tokens: 2 }],
      ['/api/inference/v1/responses', { model: MODEL, input: 'go', max_output_tokens: 2, store: false }],
      ['/api/inference/v1/messages', { model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: 2 }],
    ];
    for (const [path, body] of calls) {
      const ok = await post(path, key, { ...body, priority: 'batch' });
      expect(ok.status, `${path}: ${JSON.stringify(ok.body)}`).toBe(200);
      const none = await post(path, key, { ...body, priority: null });
      expect(none.status, path).toBe(200);
      for (const bad of ['interactive', 'low', 'BATCH', 0, ['batch']]) {
        const r = await post(path, key, { ...body, priority: bad });
        expect(r.status, `${path} priority=${JSON.stringify(bad)}`).toBe(400);
        const error = r.body.error as ErrorBody['error'] & { type: string };
        expect(error.message).toMatch(/priority/);
        // The Messages API answers in Anthropic's error shape (no param field).
        if (!path.endsWith('/messages'))
          expect(error).toMatchObject({ type: 'invalid_request_error', param: 'priority' });
      }
    }
  });
});

describe('scheduling', () => {
  it('batch streams holding every slot yield to an interactive request, which finishes while they go on; metrics by priority', async () => {
    const bulk = cliKey('bulk-streams', ['--priority', 'batch']);
    const streams = [await holdStream(bulk.key), await holdStream(bulk.key)];
    try {
      await untilRequests('running', 'batch', 2, 'two batch streams running');
      const r = await chat(hearth.key, 5);
      expect(r.status).toBe(200);
      expect(r.body.usage.completion_tokens).toBe(5);
      // The worker reports preemptions on its own channel after the job: it may reach the metrics after the answer.
      await until(
        async () => sample(await metrics(), 'hearth_preemptions_total', { model: MODEL }) >= 1,
        'a preemption counted',
      );
      const m = await metrics();
      expect(sample(m, 'hearth_generated_tokens_total', { priority: 'interactive' })).toBeGreaterThanOrEqual(5);
      expect(sample(m, 'hearth_generated_tokens_total', { priority: 'batch' })).toBeGreaterThan(0);
      // Labels never carry an account or key id: these series have a model and a priority, nothing else.
      expect(m).not.toContain(bulk.id);
      for (const line of m
        .split('\n')
        .filter((l) => /^hearth_(num_requests_(waiting|running)|generated_tokens_total|preemptions_total)\{/.test(l))) {
        expect(line).toMatch(/^[a-z_]+\{model="[^"]+"(,priority="(interactive|batch)")?\} /);
      }
    } finally {
      for (const s of streams) s.close();
    }
    await untilRequests('running', 'batch', 0, 'batch streams ended');
  });

  it('a request that lowers itself to batch yields too', async () => {
    const streams = [
      await holdStream(hearth.key, { priority: 'batch' }),
      await holdStream(hearth.key, { priority: 'batch' }),
    ];
    try {
      const r = await chat(hearth.key, 3);
      expect(r.status).toBe(200);
      expect(r.body.usage.completion_tokens).toBe(3);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('interactive streams are never preempted: with both slots held, another interactive request waits', async () => {
    const streams = [await holdStream(hearth.key), await holdStream(hearth.key)];
    try {
      const waiting = chat(hearth.key, 2);
      await untilRequests('waiting', 'interactive', 1, 'the third request waits');
      streams.pop()!.close();
      expect((await waiting).status).toBe(200);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('queued batch embeddings wait behind an interactive request, counted as waiting batch requests', async () => {
    const bulk = cliKey('bulk-embeddings', ['--priority', 'batch']);
    const streams = [await holdStream(hearth.key), await holdStream(hearth.key)];
    const order: string[] = [];
    const embeddings = Array.from({ length: 3 }, (_, i) =>
      post('/api/inference/v1/embeddings', bulk.key, { model: MODEL, input: `text ${i}` }).then((r) => {
        order.push('embedding');
        return r;
      }),
    );
    try {
      await untilRequests('waiting', 'batch', 3, 'three batch embeddings wait');
      const interactive = chat(hearth.key, 2).then((r) => {
        order.push('chat');
        return r;
      });
      await untilRequests('waiting', 'interactive', 1, 'the interactive request waits too');
      streams.pop()!.close(); // one slot frees: the interactive request takes it, though the embeddings came first
      expect((await interactive).status).toBe(200);
      for (const e of await Promise.all(embeddings)) expect(e.status).toBe(200);
      expect(order).toEqual(['chat', 'embedding', 'embedding', 'embedding']);
    } finally {
      for (const s of streams) s.close();
    }
    await untilRequests('running', 'batch', 0, 'batch embeddings ended');
  });

  it('Batch API embedding lines of an interactive key wait at batch priority behind an interactive request', async () => {
    const streams = [await holdStream(hearth.key), await holdStream(hearth.key)];
    const lines = Array.from({ length: 3 }, (_, i) =>
      JSON.stringify({
        custom_id: `e-${i}`,
        method: 'POST',
        url: '/v1/embeddings',
        body: { model: MODEL, input: `text ${i}` },
      }),
    ).join('\n');
    const form = new FormData();
    form.set('purpose', 'batch');
    form.set('file', new Blob([lines]), 'lines.jsonl');
    const file = (await (
      await fetch(`${hearth.baseUrl}/api/inference/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hearth.key}` },
        body: form,
      })
    ).json()) as { id: string };
    const batch = await post('/api/inference/v1/batches', hearth.key, {
      input_file_id: file.id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    expect(batch.status).toBe(200);
    const counts = async () =>
      (await (
        await fetch(`${hearth.baseUrl}/api/inference/v1/batches/${batch.body.id}`, {
          headers: { authorization: `Bearer ${hearth.key}` },
        })
      ).json()) as { status: string; request_counts: { completed: number } };
    try {
      await untilRequests('waiting', 'batch', 3, 'three batch lines wait');
      const interactive = chat(hearth.key, 2);
      await untilRequests('waiting', 'interactive', 1, 'the interactive request waits too');
      streams.pop()!.close();
      expect((await interactive).status).toBe(200);
      await until(async () => (await counts()).status === 'completed', 'the batch completes after it');
      expect((await counts()).request_counts.completed).toBe(3);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it("another account's request takes a slot at once from an account holding every slot, ahead of that account's queue", async () => {
    const other = cliKey('tenant-b', ['--account', 'tenant-b']);
    // Account "default" holds both slots with streams that never end and queues four more long requests.
    const flood = [await holdStream(hearth.key), await holdStream(hearth.key)];
    const queued = Array.from({ length: 4 }, () => chat(hearth.key, 400));
    const order: string[] = [];
    for (const q of queued) void q.then(() => order.push('a'));
    try {
      await untilRequests('waiting', 'interactive', 4, 'four requests of account a wait');
      const preemptedBefore = sample(await metrics(), 'hearth_preemptions_total', {});
      // Slots go round-robin between accounts: a's newest stream yields its slot (paused, resumed later) to b,
      // whose request ends while both of a's streams are still held open.
      const b = await chat(other.key, 2);
      expect(b.status).toBe(200);
      expect(b.body.usage.completion_tokens).toBe(2);
      expect(order).toEqual([]);
      // The worker reports preemptions on its own channel after b's job: they may reach the metrics after b's answer.
      await until(
        async () => sample(await metrics(), 'hearth_preemptions_total', {}) >= preemptedBefore + 1,
        "b's preemption counted",
      );
      const m = await metrics();
      expect(sample(m, 'hearth_preemptions_total', {})).toBe(preemptedBefore + 1);
      expect(sample(m, 'hearth_num_requests_waiting', { priority: 'interactive' })).toBe(4);
      // The stream that yielded is back on its slot: both of a's streams run, a's queue still waits.
      await untilRequests('running', 'interactive', 2, "a's two streams run again");
    } finally {
      for (const s of flood) s.close();
    }
    expect((await Promise.all(queued)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });
});
