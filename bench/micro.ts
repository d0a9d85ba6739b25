import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Bench } from 'tinybench';
import { invalidRequest, modelWarmingUp, queueFull } from '../src/errors/index.ts';
import { CompletionBuilder } from '../src/protocol/completion-builder.ts';
import { sseData } from '../src/protocol/sse.ts';
import { validateChatRequest } from '../src/protocol/validate-chat-request.ts';
import { ApiKeyRepository } from '../src/accounts/api-key-repository.ts';
import { HearthStore } from '../src/store/database.ts';
import { fmt, recordResults, table } from './lib/report.ts';

/**
 * bench:micro: tinybench micro-benchmarks of the per-request and per-token hot paths, in process:
 * SSE chunk encoding (CompletionBuilder.contentEvent, pre-rendered prefix/suffix, vs the generic
 * sseData(builder.chunk(...))), request validation (validateChatRequest on a parsed body; also with the
 * JSON.parse the router does), API-key lookup (ApiKeyRepository.authenticate on a temp LMDB: id lookup +
 * SHA-256 + constant-time compare; and a rejected key), error serialization (ApiError.toBody +
 * JSON.stringify). BENCH_MICRO_TIME: ms per task (default 500).
 */
const TIME = Number(process.env.BENCH_MICRO_TIME ?? 500);

const builder = new CompletionBuilder('local/tiny-chat');
const token = ' tokens';
const tokenEscaped = ' "quoted"\n\\ and ünïcødé 🔥';
// Equivalence first: the fast path must produce exactly the generic bytes.
for (const t of [token, tokenEscaped]) {
  if (builder.contentEvent(t) !== sseData(builder.chunk({ content: t }, null)))
    throw new Error('contentEvent differs from sseData(chunk)');
}

const chatBody = {
  model: 'local/tiny-chat',
  messages: [
    { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
    { role: 'user', content: 'What is the capital of France?' },
    { role: 'assistant', content: 'Paris.' },
    { role: 'user', content: [{ type: 'text', text: 'And of Italy?' }] },
  ],
  temperature: 0.7,
  top_p: 0.9,
  max_tokens: 256,
  stop: ['\n\n', 'User:'],
  seed: 42,
  stream: true,
  stream_options: { include_usage: true },
};
const chatJson = JSON.stringify(chatBody);
// validateChatRequest reads its input and builds a new ChatRequest: the same parsed body can be reused.
const frozen = JSON.stringify(chatBody);
validateChatRequest(chatBody);
if (JSON.stringify(chatBody) !== frozen)
  throw new Error('validateChatRequest mutated its input; the benchmark must clone it');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bench-micro-'));
const store = HearthStore.open(dir);
const keys = new ApiKeyRepository(store);
const { key } = await keys.create('bench');
for (let i = 0; i < 1000; i++) await keys.create(`other-${i}`); // a realistic table, not a single record
const wrongSecret = key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');
keys.authenticate(key);

const warming = modelWarmingUp({ state: 'pulling', progress: 42.5, workers_ready: 0, workers: 1 });
const invalid = invalidRequest(
  "Invalid value for 'temperature': must be between 0 and 2",
  'temperature',
  'invalid_value',
);
const full = queueFull(1);

const bench = new Bench({ time: TIME, warmupTime: 100 });
bench
  .add('SSE content event: CompletionBuilder.contentEvent', () => {
    builder.contentEvent(token);
  })
  .add('SSE content event: sseData(builder.chunk(...)) (generic)', () => {
    sseData(builder.chunk({ content: token }, null));
  })
  .add('SSE content event, escapes + unicode: contentEvent', () => {
    builder.contentEvent(tokenEscaped);
  })
  .add('SSE content event, escapes + unicode: sseData(chunk)', () => {
    sseData(builder.chunk({ content: tokenEscaped }, null));
  })
  .add('validateChatRequest (parsed body, 4 messages)', () => {
    validateChatRequest(chatBody);
  })
  .add('JSON.parse + validateChatRequest (what a request costs)', () => {
    validateChatRequest(JSON.parse(chatJson));
  })
  .add('ApiKeyRepository.authenticate (valid key, LMDB, 1,001 keys)', () => {
    keys.authenticate(key);
  })
  .add('ApiKeyRepository.authenticate (wrong secret -> 401)', () => {
    try {
      keys.authenticate(wrongSecret);
    } catch {
      /* expected */
    }
  })
  .add('error body: JSON.stringify(invalidRequest.toBody())', () => {
    JSON.stringify(invalid.toBody());
  })
  .add('error body: JSON.stringify(modelWarmingUp.toBody()) (with details)', () => {
    JSON.stringify(warming.toBody());
  })
  .add('error body: JSON.stringify(queueFull.toBody())', () => {
    JSON.stringify(full.toBody());
  });

try {
  await bench.run();
} finally {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

const rows: Array<Array<string | number>> = [];
const data: Array<Record<string, unknown>> = [];
for (const task of bench.tasks) {
  const r = task.result;
  if (r.state !== 'completed') {
    rows.push([task.name, r.state, '', '', '', '']);
    data.push({ name: task.name, state: r.state });
    continue;
  }
  const nsPerOp = r.latency.mean * 1e6;
  rows.push([
    task.name,
    fmt.int(r.throughput.mean),
    `${nsPerOp < 1000 ? nsPerOp.toFixed(0) : fmt.int(nsPerOp)} ns`,
    `${(r.latency.p50 * 1e6).toFixed(0)} ns`,
    `${(r.latency.p99 * 1e6).toFixed(0)} ns`,
    `±${r.latency.rme.toFixed(2)}%`,
  ]);
  data.push({
    name: task.name,
    opsPerSec: r.throughput.mean,
    meanNs: nsPerOp,
    p50Ns: r.latency.p50 * 1e6,
    p99Ns: r.latency.p99 * 1e6,
    rme: r.latency.rme,
  });
}
const markdown = `tinybench, ${TIME} ms per task after 100 ms warm-up, one thread. \`contentEvent\` was checked to return exactly the bytes of \`sseData(chunk)\`.

${table(['task', 'ops/s', 'mean', 'p50', 'p99', 'rme'], rows)}`;
recordResults('micro', 'Micro-benchmarks', { time: TIME, tasks: data }, markdown);
