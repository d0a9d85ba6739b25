import os from 'node:os';
import { ensureTinyChatModel, ensureTinyModel } from '../models/test-model-path.ts';
import { cpuDelta, threadCpu } from './lib/cpu.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { startBenchHearth } from './lib/servers.ts';
import { keepAliveAgent, type StreamOutcome, streamChat } from './lib/sse-client.ts';
import { mean, percentile } from './lib/stats.ts';
import { closedLoop } from './lib/closed-loop.ts';
import { modelArgs } from '../test/helpers/hearth-process.ts';

/**
 * bench:stream, two scenarios of streamed chat completions:
 *
 * A. Tiny model under concurrency: the tiny chat GGUF without its scripted stop (so every request
 *    generates exactly max_tokens), BENCH_STREAM_CLIENTS clients (default 16; server --slots 8) each
 *    looping streaming requests for BENCH_STREAM_SECONDS (15). Client-side first-token and end-to-end
 *    percentiles, aggregate tokens/s = usage.completion_tokens summed / wall time. BENCH_STREAM_ENGINE
 *    picks the engine(s), comma-separated (default auto).
 *
 * B. Gateway fan-out with --engine instant (no model math): BENCH_FANOUT_STREAMS streams (64) at once,
 *    each asking for BENCH_FANOUT_TOKENS tokens (20,000). Measures the SSE tokens/s the gateway pushes and
 *    verifies every stream: 200, role chunk first, content exactly the instant engine's deterministic
 *    word cycle, finish_reason "length", usage.completion_tokens = max_tokens, [DONE] last. Target
 *    >= 100,000 tokens/s. Also reports the server's CPU time per thread (main thread = the gateway).
 */
const CLIENTS = Number(process.env.BENCH_STREAM_CLIENTS ?? 16);
const SLOTS = Number(process.env.BENCH_STREAM_SLOTS ?? 8);
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 15);
const MAX_TOKENS = Number(process.env.BENCH_STREAM_MAX_TOKENS ?? 32);
const FANOUT_STREAMS = Number(process.env.BENCH_FANOUT_STREAMS ?? 64);
const FANOUT_TOKENS = Number(process.env.BENCH_FANOUT_TOKENS ?? 20_000);
const FANOUT_TARGET = 100_000;
/** Engines of scenario A, comma-separated: auto (native when built, else node-llama-cpp), native, node-llama-cpp. */
const ENGINES = (process.env.BENCH_STREAM_ENGINE ?? 'auto')
  .split(',')
  .map((e) => e.trim())
  .filter(Boolean);

/** The instant engine's output for `n` tokens (src/worker/instant-engine.ts: one word per token, cycling). */
const WORDS = [' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', '.'];
const expectedInstant = (n: number) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join('');

/** Problems with one stream, or [] when it is complete and well-formed. */
function checkStream(s: StreamOutcome, maxTokens: number, expected?: string): string[] {
  const problems: string[] = [];
  if (s.error) problems.push(s.error);
  if (s.status !== 200) problems.push(`status ${s.status}`);
  if (!s.done) problems.push('no [DONE]');
  if (s.chunks[0]?.choices[0]?.delta.role !== 'assistant') problems.push('first chunk has no assistant role');
  const finish = s.chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason;
  if (finish !== 'length') problems.push(`finish_reason ${finish}`);
  const usage = s.chunks.at(-1)?.usage;
  if (usage?.completion_tokens !== maxTokens)
    problems.push(`usage.completion_tokens ${usage?.completion_tokens} != ${maxTokens}`);
  if (expected !== undefined && s.content !== expected) {
    let i = 0;
    while (i < s.content.length && s.content[i] === expected[i]) i++;
    problems.push(`content differs at char ${i} (got ${s.content.length} chars, expected ${expected.length})`);
  }
  return problems;
}

async function tinyModelScenario(engineFlag: string) {
  const model = await ensureTinyChatModel({ reply: null });
  const hearth = await startBenchHearth(
    modelArgs(model, 'local/tiny', { slots: SLOTS, 'queue-limit': CLIENTS * 2, engine: engineFlag }),
  );
  const agent = keepAliveAgent(CLIENTS);
  const url = `${hearth.baseUrl}/api/inference/v1/chat/completions`;
  const body = (i: number) => ({
    model: 'local/tiny',
    messages: [{ role: 'user', content: `Tell me a story number ${i}.` }],
    max_tokens: MAX_TOKENS,
    temperature: 0.8,
    seed: i,
    stream_options: { include_usage: true },
  });
  try {
    for (let i = 0; i < SLOTS; i++) await streamChat(url, hearth.key, body(i), { agent }); // warm-up
    const outcomes: StreamOutcome[] = [];
    const started = performance.now();
    await closedLoop({ clients: CLIENTS, durationS: SECONDS }, async (n) => {
      outcomes.push(await streamChat(url, hearth.key, body(n), { agent, timeoutMs: 120_000 }));
    });
    const wall = (performance.now() - started) / 1000;
    const ok = outcomes.filter((s) => checkStream(s, MAX_TOKENS).length === 0);
    const failures = outcomes.length - ok.length;
    const tokens = ok.reduce((a, s) => a + (s.chunks.at(-1)?.usage?.completion_tokens ?? 0), 0);
    const ttft = ok.map((s) => s.firstContentAt - s.sentAt);
    const e2e = ok.map((s) => s.endedAt - s.sentAt);
    const engine = ((await (await fetch(`${hearth.baseUrl}/health`)).json()) as { engine: { kind: string } }).engine
      .kind;
    return {
      engine,
      requests: outcomes.length,
      failures,
      firstFailure: outcomes.map((s) => checkStream(s, MAX_TOKENS)).find((p) => p.length > 0) ?? null,
      tokens,
      wall,
      tokensPerSec: tokens / wall,
      ttft: { p50: percentile(ttft, 50), p90: percentile(ttft, 90), p99: percentile(ttft, 99), mean: mean(ttft) },
      e2e: { p50: percentile(e2e, 50), p90: percentile(e2e, 90), p99: percentile(e2e, 99), mean: mean(e2e) },
    };
  } finally {
    agent.destroy();
    await hearth.stop();
  }
}

async function fanOutScenario() {
  // The instant engine loads no weights, but the context (prompt + completion) is still capped by the
  // model's declared context length: a tiny GGUF that declares 1M tokens lets a stream run long.
  const context = 1 << 20;
  const model = await ensureTinyModel({ contextLength: context });
  const hearth = await startBenchHearth(
    modelArgs(model, 'local/instant', {
      engine: 'instant',
      slots: FANOUT_STREAMS,
      'context-size': context,
      'max-tokens': Math.max(FANOUT_TOKENS, 4096),
      'stream-buffer-limit': 64 << 20,
    }),
  );
  const agent = keepAliveAgent(FANOUT_STREAMS);
  const url = `${hearth.baseUrl}/api/inference/v1/chat/completions`;
  const body = {
    model: 'local/instant',
    messages: [{ role: 'user', content: 'Fan out.' }],
    max_tokens: FANOUT_TOKENS,
    stream_options: { include_usage: true },
  };
  const expected = expectedInstant(FANOUT_TOKENS);
  try {
    await Promise.all(
      Array.from({ length: 4 }, () => streamChat(url, hearth.key, { ...body, max_tokens: 500 }, { agent })),
    ); // warm-up
    const pid = hearth.proc.pid!;
    const cpuBefore = threadCpu(pid);
    const clientCpuBefore = process.cpuUsage();
    const started = performance.now();
    const streams = await Promise.all(
      Array.from({ length: FANOUT_STREAMS }, () => streamChat(url, hearth.key, body, { agent, timeoutMs: 300_000 })),
    );
    const wall = (performance.now() - started) / 1000;
    const threads = cpuDelta(cpuBefore, threadCpu(pid), pid);
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const problems = streams.map((s) => checkStream(s, FANOUT_TOKENS, expected));
    const complete = problems.filter((p) => p.length === 0).length;
    const tokens = streams.reduce((a, s) => a + (s.chunks.at(-1)?.usage?.completion_tokens ?? 0), 0);
    const events = streams.reduce((a, s) => a + s.contentEvents, 0);
    const bytes = streams.reduce((a, s) => a + s.chunks.length, 0);
    const e2e = streams.map((s) => s.endedAt - s.sentAt);
    return {
      streams: FANOUT_STREAMS,
      tokensPerStream: FANOUT_TOKENS,
      complete,
      firstProblem: problems.find((p) => p.length > 0) ?? null,
      tokens,
      contentEvents: events,
      chunks: bytes,
      wall,
      tokensPerSec: tokens / wall,
      tokensPerEvent: tokens / events,
      e2e: { p50: percentile(e2e, 50), p99: percentile(e2e, 99) },
      serverCpu: {
        total: threads.reduce((a, t) => a + t.seconds, 0),
        main: threads.find((t) => t.main)?.seconds ?? 0,
        threads: threads.slice(0, 6),
      },
      clientCpuSeconds: (clientCpu.user + clientCpu.system) / 1e6,
    };
  } finally {
    agent.destroy();
    await hearth.stop();
  }
}

const aRuns: Array<Awaited<ReturnType<typeof tinyModelScenario>>> = [];
for (const engine of ENGINES) {
  console.log(`A: tiny model, --engine ${engine}, ${CLIENTS} clients, ${SLOTS} slots, ${SECONDS} s ...`);
  aRuns.push(await tinyModelScenario(engine));
  console.log(aRuns.at(-1));
}
console.log(`B: instant engine fan-out, ${FANOUT_STREAMS} x ${FANOUT_TOKENS} tokens ...`);
const b = await fanOutScenario();
console.log(b);

const mainShare = b.serverCpu.main / b.wall;
const markdown = `### A. Tiny model, ${CLIENTS} concurrent streaming clients, --slots ${SLOTS}, max_tokens ${MAX_TOKENS}, ${SECONDS} s

${table(
  [
    'engine',
    'requests',
    'failed',
    'tokens',
    'tokens/s',
    'TTFT p50',
    'TTFT p90',
    'TTFT p99',
    'e2e p50',
    'e2e p90',
    'e2e p99',
  ],
  aRuns.map((a) => [
    a.engine,
    a.requests,
    a.failures,
    fmt.int(a.tokens),
    fmt.num(a.tokensPerSec),
    fmt.ms(a.ttft.p50),
    fmt.ms(a.ttft.p90),
    fmt.ms(a.ttft.p99),
    fmt.ms(a.e2e.p50),
    fmt.ms(a.e2e.p90),
    fmt.ms(a.e2e.p99),
  ]),
)}
${aRuns
  .filter((a) => a.failures > 0)
  .map((a) => `\nFirst failure (${a.engine}): ${a.firstFailure?.join('; ')}\n`)
  .join('')}
TTFT and e2e are client-side (send to first content event / to the end of the response), queueing included
(${CLIENTS} clients on ${SLOTS} slots). The model is the tiny test llama (2 layers, width 64) without its scripted stop.

### B. Gateway fan-out, \`--engine instant\`: ${FANOUT_STREAMS} streams x ${fmt.int(FANOUT_TOKENS)} tokens

${table(
  [
    'streams complete + verified',
    'tokens',
    'wall',
    'SSE tokens/s',
    'tokens per SSE event',
    'stream e2e p50 / p99',
    'server CPU (all threads)',
    'server main thread CPU',
    'bench client CPU',
  ],
  [
    [
      `${b.complete} / ${b.streams}`,
      fmt.int(b.tokens),
      `${b.wall.toFixed(2)} s`,
      `**${fmt.int(b.tokensPerSec)}**`,
      fmt.num(b.tokensPerEvent, 2),
      `${fmt.ms(b.e2e.p50)} / ${fmt.ms(b.e2e.p99)}`,
      `${b.serverCpu.total.toFixed(2)} s`,
      `${b.serverCpu.main.toFixed(2)} s (${fmt.pct(mainShare)} of wall)`,
      `${b.clientCpuSeconds.toFixed(2)} s (${fmt.pct(b.clientCpuSeconds / b.wall)} of wall)`,
    ],
  ],
)}

Target >= ${fmt.int(FANOUT_TARGET)} tokens/s: ${b.tokensPerSec >= FANOUT_TARGET ? 'met' : 'NOT met'}. Every stream parsed event by event: role first,
content equal to the instant engine's word cycle, finish_reason length, usage.completion_tokens = max_tokens, [DONE] last${b.complete === b.streams ? ' (all passed)' : `; FAILED: ${b.firstProblem?.join('; ')}`}.
Busiest server threads (CPU s): ${b.serverCpu.threads.map((t) => `${t.main ? 'main' : t.name}#${t.tid} ${t.seconds.toFixed(2)}`).join(', ')}.
The client (this process: node:http + one JSON.parse per event) shares the machine's ${os.availableParallelism()} cores with the server.`;
recordResults(
  'stream',
  'Streaming',
  {
    clients: CLIENTS,
    slots: SLOTS,
    seconds: SECONDS,
    maxTokens: MAX_TOKENS,
    tiny: aRuns,
    fanOut: b,
    fanOutTarget: FANOUT_TARGET,
  },
  markdown,
);
if (aRuns.some((a) => a.failures > 0) || b.complete !== b.streams) process.exitCode = 1;
