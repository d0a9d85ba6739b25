import http from 'node:http';
import { ensureTinyChatModel } from '../models/test-model-path.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { rssBytes, startBenchHearth } from './lib/servers.ts';
import { keepAliveAgent, postApiRequest, streamChat } from './lib/sse-client.ts';
import { percentile, sleep } from './lib/stats.ts';
import { closedLoop } from './lib/closed-loop.ts';
import { modelArgs } from '../test/helpers/hearth-process.ts';

/**
 * bench:overload: ten times more concurrent clients than the server can hold (slots + queue), for a
 * while. Every request must end as a complete answer (JSON with usage, or a stream ending in [DONE]) or
 * a 429/503 with Retry-After; a client time-out counts as hung. Errors are counted by type, and the
 * server's RSS (VmRSS of /proc/<pid>/status, worker threads included) is sampled before, during and
 * after: growth must stay under 100 MB.
 * Options (env): BENCH_OVERLOAD_SLOTS (2), BENCH_OVERLOAD_QUEUE (4), BENCH_OVERLOAD_SECONDS (20),
 * BENCH_OVERLOAD_MAX_TOKENS (8), BENCH_OVERLOAD_TIMEOUT_MS (60000), BENCH_OVERLOAD_ENGINE (auto),
 * BENCH_OVERLOAD_CLIENTS (10 x capacity), BENCH_OVERLOAD_MODEL (a .gguf; default the tiny chat model),
 * BENCH_OVERLOAD_IDLE_SECONDS (3: the last RSS sample, that long after the load). The server's environment passes
 * through (e.g. HEARTH_PROMPT_CACHE_MIB=0); its host prompt cache's bytes and entries are read from /metrics.
 */
const SLOTS = Number(process.env.BENCH_OVERLOAD_SLOTS ?? 2);
const QUEUE = Number(process.env.BENCH_OVERLOAD_QUEUE ?? 4);
const SECONDS = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 20);
const MAX_TOKENS = Number(process.env.BENCH_OVERLOAD_MAX_TOKENS ?? 8);
const TIMEOUT_MS = Number(process.env.BENCH_OVERLOAD_TIMEOUT_MS ?? 60_000);
const ENGINE = process.env.BENCH_OVERLOAD_ENGINE ?? 'auto';
const CAPACITY = SLOTS + QUEUE;
const CLIENTS = Number(process.env.BENCH_OVERLOAD_CLIENTS ?? CAPACITY * 10);
const IDLE_SECONDS = Number(process.env.BENCH_OVERLOAD_IDLE_SECONDS ?? 3);
const GROWTH_LIMIT = 100 * 2 ** 20;

type Outcome =
  | 'ok'
  | `rejected ${number}`
  | `rejected ${number} WITHOUT Retry-After`
  | `status ${number}`
  | 'incomplete'
  | 'hung'
  | `network error`;

interface JsonAnswer {
  status: number;
  retryAfter: string | null;
  body: string;
  error: string | null;
  ms: number;
}

/** A non-streaming request with a client time-out. */
function postJson(url: string, key: string, body: unknown, agent: http.Agent): Promise<JsonAnswer> {
  const payload = JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Omit<JsonAnswer, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...a, ms: performance.now() - started });
    };
    const req = postApiRequest(url, key, payload, agent);
    const timer = setTimeout(() => {
      req.destroy();
      done({ status: 0, retryAfter: null, body: '', error: 'timeout' });
    }, TIMEOUT_MS);
    req.on('error', (e) => done({ status: 0, retryAfter: null, body: '', error: e.message }));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () =>
        done({
          status: res.statusCode ?? 0,
          retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
          body: text,
          error: null,
        }),
      );
      res.on('error', (e) => done({ status: res.statusCode ?? 0, retryAfter: null, body: text, error: e.message }));
    });
    req.end(payload);
  });
}

function classifyJson(a: JsonAnswer): Outcome {
  if (a.error === 'timeout') return 'hung';
  if (a.error) return 'network error';
  if (a.status === 200) {
    try {
      const j = JSON.parse(a.body) as {
        choices?: Array<{ finish_reason?: string }>;
        usage?: { completion_tokens?: number };
      };
      return j.choices?.[0]?.finish_reason && j.usage?.completion_tokens !== undefined ? 'ok' : 'incomplete';
    } catch {
      return 'incomplete';
    }
  }
  if (a.status === 429 || a.status === 503)
    return a.retryAfter ? `rejected ${a.status}` : `rejected ${a.status} WITHOUT Retry-After`;
  return `status ${a.status}`;
}

const model = process.env.BENCH_OVERLOAD_MODEL ?? (await ensureTinyChatModel({ reply: null }));
const hearth = await startBenchHearth(
  modelArgs(model, 'local/tiny', { slots: SLOTS, 'queue-limit': QUEUE, engine: ENGINE }),
);
const engine = ((await (await fetch(`${hearth.baseUrl}/health`)).json()) as { engine: { kind: string } }).engine.kind;
const pid = hearth.proc.pid!;
const url = `${hearth.baseUrl}/api/inference/v1/chat/completions`;
const agent = keepAliveAgent(CLIENTS);
const counts = new Map<Outcome, number>();
const okLatency: number[] = [];
const rejectLatency: number[] = [];
const rss: Array<{ t: number; bytes: number }> = [];
let rssBefore = 0;
let rssAfter = 0;
let rssAfterIdle = 0;
let wall = 0;
const promptCache: string[] = [];
try {
  // Warm-up: a few complete requests, then the baseline RSS.
  for (let i = 0; i < CAPACITY; i++)
    await postJson(
      url,
      hearth.key,
      { model: 'local/tiny', messages: [{ role: 'user', content: 'warm up' }], max_tokens: MAX_TOKENS },
      agent,
    );
  await sleep(1000);
  rssBefore = rssBytes(pid);
  const started = performance.now();
  const sampler = setInterval(() => rss.push({ t: (performance.now() - started) / 1000, bytes: rssBytes(pid) }), 1000);
  await closedLoop({ clients: CLIENTS, durationS: SECONDS }, async (i, client) => {
    const body = {
      model: 'local/tiny',
      messages: [{ role: 'user', content: `Request ${i} from client ${client}.` }],
      max_tokens: MAX_TOKENS,
    };
    let outcome: Outcome;
    let ms: number;
    if (i % 2 === 0) {
      const a = await postJson(url, hearth.key, body, agent);
      outcome = classifyJson(a);
      ms = a.ms;
    } else {
      const s = await streamChat(
        url,
        hearth.key,
        { ...body, stream_options: { include_usage: true } },
        { agent, timeoutMs: TIMEOUT_MS },
      );
      ms = s.endedAt - s.sentAt;
      if (s.error?.startsWith('client time-out')) outcome = 'hung';
      else if (s.status === 200) outcome = s.done && !s.error && s.chunks.at(-1)?.usage ? 'ok' : 'incomplete';
      else if (s.status === 429 || s.status === 503)
        outcome = s.retryAfter ? `rejected ${s.status}` : `rejected ${s.status} WITHOUT Retry-After`;
      else if (s.status === 0) outcome = 'network error';
      else outcome = `status ${s.status}`;
    }
    counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    if (outcome === 'ok') okLatency.push(ms);
    else if (outcome.startsWith('rejected')) {
      rejectLatency.push(ms);
      await sleep(20); // a rejected client comes straight back (not honouring Retry-After: worst case)
    }
  });
  clearInterval(sampler);
  wall = (performance.now() - started) / 1000;
  rssAfter = rssBytes(pid);
  await sleep(IDLE_SECONDS * 1000);
  rssAfterIdle = rssBytes(pid);
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  for (const line of text.split('\n'))
    if (/^hearth_prompt_cache_(bytes|entries|capacity_bytes|lookups_total|hits_total)\{/.test(line))
      promptCache.push(line);
  const health = await fetch(`${hearth.baseUrl}/health`);
  if (health.status !== 200)
    counts.set(`status ${health.status}` as Outcome, (counts.get(`status ${health.status}` as Outcome) ?? 0) + 1);
} finally {
  agent.destroy();
  await hearth.stop();
}

const total = [...counts.values()].reduce((a, b) => a + b, 0);
const bad = [...counts.entries()]
  .filter(([k]) => k !== 'ok' && !/^rejected \d+$/.test(k))
  .reduce((a, [, v]) => a + v, 0);
const peak = Math.max(rssBefore, ...rss.map((s) => s.bytes));
const growth = rssAfterIdle - rssBefore;
const verdict = bad === 0 && growth < GROWTH_LIMIT && (counts.get('ok') ?? 0) > 0;
const markdown = `${CLIENTS} concurrent clients (capacity: --slots ${SLOTS}, --queue-limit ${QUEUE}, 1 worker) looping for ${SECONDS} s,
half JSON, half streaming, max_tokens ${MAX_TOKENS} on the tiny chat model (never stops early; ${engine} engine); a rejected client retries after 20 ms;
client time-out ${TIMEOUT_MS / 1000} s counts as hung.

${table(
  ['outcome', 'requests', 'share'],
  [...counts.entries()].sort((x, y) => y[1] - x[1]).map(([k, v]) => [k, fmt.int(v), fmt.pct(v / total)]),
)}

${table(
  [
    'requests',
    'req/s',
    'completed p50 / p99',
    'rejected p50 / p99',
    'RSS before',
    'RSS peak',
    'RSS after',
    `RSS after ${IDLE_SECONDS} s idle`,
    'growth',
  ],
  [
    [
      fmt.int(total),
      fmt.num(total / wall),
      `${fmt.ms(percentile(okLatency, 50))} / ${fmt.ms(percentile(okLatency, 99))}`,
      `${fmt.ms(percentile(rejectLatency, 50))} / ${fmt.ms(percentile(rejectLatency, 99))}`,
      fmt.mb(rssBefore),
      fmt.mb(peak),
      fmt.mb(rssAfter),
      fmt.mb(rssAfterIdle),
      `${growth >= 0 ? '+' : ''}${fmt.mb(growth)}`,
    ],
  ],
)}

Verdict: ${verdict ? 'PASS' : 'FAIL'}: ${bad} requests neither complete nor a 429/503 with Retry-After (hung, truncated, other status, missing Retry-After),
RSS growth ${fmt.mb(growth)} (limit ${fmt.mb(GROWTH_LIMIT)}).
Host prompt cache at the end: ${promptCache.join('; ') || 'not reported (engine without it)'}.`;
recordResults(
  'overload',
  'Overload',
  {
    engine,
    slots: SLOTS,
    queueLimit: QUEUE,
    clients: CLIENTS,
    seconds: SECONDS,
    maxTokens: MAX_TOKENS,
    counts: Object.fromEntries(counts),
    wall,
    rssBefore,
    rssAfter,
    rssAfterIdle,
    rssSamples: rss,
    okLatency: { p50: percentile(okLatency, 50), p99: percentile(okLatency, 99) },
    rejectLatency: { p50: percentile(rejectLatency, 50), p99: percentile(rejectLatency, 99) },
    verdict,
  },
  markdown,
);
if (!verdict) process.exitCode = 1;
