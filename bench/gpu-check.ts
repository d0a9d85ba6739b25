/**
 * `npm run bench:gpu-check`: on a machine with an NVIDIA GPU, checks that `hearth serve --engine
 * node-llama-cpp` loads the model on CUDA and serves chat completions, and measures it beside
 * `--engine native` (CPU) on the same machine. Not part of the test suite (CI has no GPU).
 *
 * Per model and engine: starts `hearth serve` (one worker, --slots, --threads: 0 = Hearth's own choice,
 * which for the native engine calibrates at load; --context-size 2048),
 * reads the "model ready" log line (node-llama-cpp: the GPU backend it loaded, the devices and the
 * layers offloaded; native: the ggml CPU backend), then
 *  - one JSON completion (status 200, object chat.completion, an assistant message, usage, finish_reason);
 *  - one streaming completion of the same request (SSE to [DONE], usage chunk, finish_reason); whether its
 *    text equals the JSON one's (temperature 0, seed 1) is reported, not required: the second request
 *    reuses the first's cached prompt, and GPU kernels are not bit-reproducible across batch shapes, so
 *    greedy text from a random-weight model (near-tied logits) may part late in the completion;
 *  - a warm-up (one 32-token request per slot), then per --concurrency level N clients looping streaming
 *    requests (max_tokens --max-tokens, temperature 0) for --duration seconds; tok/s = completion tokens
 *    received / wall time of the level (Hearth has no ignore_eos: a request that stops early counts what
 *    it generated).
 * Exit status 1 when a check fails, or when node-llama-cpp did not load the CUDA backend with every
 * layer offloaded (--allow-cpu drops that check, for a dry run on a machine without a GPU).
 *
 *   npm run bench:gpu-check -- [--models /work/shared/models/stories260K.gguf,0.5b-q8] [--engines node-llama-cpp,native]
 *     [--concurrency 1,8] [--duration 10] [--max-tokens 128] [--slots 8] [--threads 0] [--allow-cpu] [--no-results-md]
 *
 * --models takes .gguf paths or bench/lib/model-shapes.ts keys (56m, 0.5b-q8: written on first use by
 * models/realistic-llama.ts, which reads its tokenizer from $HEARTH_TOKENIZER_SOURCE or the shared models folder).
 * Output: a table on stdout, bench/out/gpu-check-<timestamp>.json and a section appended to bench/RESULTS.md.
 *
 * The CUDA runtime (libcudart.so.13, libcublas.so.13, libcublasLt.so.13) must be on LD_LIBRARY_PATH or
 * in a standard place. node-llama-cpp 3.22.1's prebuilt CUDA backend runs on an sm_90 GPU (H100) only with an
 * R590+ driver; with an older one, build one for the machine's GPU first (npm run build:cuda, native/build-cuda.sh) and
 * point node-llama-cpp at it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { startHearthProcess, type HearthProcess } from '../test/helpers/hearth-process.ts';
import { SHAPES } from './lib/model-shapes.ts';
import { modelReadyFields } from './lib/servers.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { percentile } from './lib/stats.ts';
import { closedLoop } from './lib/closed-loop.ts';
import {
  makeAgent,
  type StreamLoadSummary,
  streamTimed,
  type StreamTarget,
  summarizeStreams,
  type TimedStream,
} from './lib/timed-sse.ts';
import { postChat } from './lib/chat-fetch.ts';

type Engine = 'node-llama-cpp' | 'native';

interface Options {
  models: string[];
  engines: Engine[];
  concurrency: number[];
  durationS: number;
  maxTokens: number;
  slots: number;
  threads: number;
  allowCpu: boolean;
  resultsMd: boolean;
}

const USAGE = `usage: npm run bench:gpu-check -- [--models <gguf|56m|0.5b-q8>[,...]] [--engines node-llama-cpp,native]
  [--concurrency 1,8] [--duration 10] [--max-tokens 128] [--slots 8] [--threads 0] [--allow-cpu] [--no-results-md]`;

function parseArgs(argv: string[]): Options {
  const o: Options = {
    models: ['/work/shared/models/stories260K.gguf'],
    engines: ['node-llama-cpp', 'native'],
    concurrency: [1, 8],
    durationS: 10,
    maxTokens: 128,
    slots: 8,
    threads: 0,
    allowCpu: false,
    resultsMd: true,
  };
  const ints = (s: string, flag: string): number[] => {
    const v = s.split(',').map(Number);
    if (v.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`${flag}: expected positive integers, got ${s}`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    switch (flag) {
      case '--models':
        o.models = next().split(',');
        break;
      case '--engines': {
        const e = next().split(',');
        if (e.some((x) => x !== 'node-llama-cpp' && x !== 'native'))
          throw new Error(`--engines: node-llama-cpp and/or native, got ${e.join(',')}`);
        o.engines = e as Engine[];
        break;
      }
      case '--concurrency':
        o.concurrency = ints(next(), flag);
        break;
      case '--duration':
        o.durationS = ints(next(), flag)[0]!;
        break;
      case '--max-tokens':
        o.maxTokens = ints(next(), flag)[0]!;
        break;
      case '--slots':
        o.slots = ints(next(), flag)[0]!;
        break;
      case '--threads': {
        const t = Number(next());
        if (!Number.isInteger(t) || t < 0) throw new Error(`--threads: expected an integer >= 0, got ${t}`);
        o.threads = t;
        break;
      }
      case '--allow-cpu':
        o.allowCpu = true;
        break;
      case '--no-results-md':
        o.resultsMd = false;
        break;
      default:
        throw new Error(`unknown argument ${flag}\n${USAGE}`);
    }
  }
  return o;
}

const log = (msg: string) => console.error(`[gpu-check] ${msg}`);

async function modelPath(item: string): Promise<{ path: string; label: string }> {
  const shape = SHAPES[item];
  if (shape) {
    if (shape.quantizeTo) throw new Error(`--models: ${item} needs llama-quantize; use 56m or 0.5b-q8`);
    log(`model ${item}: writing or reusing the generated GGUF`);
    return { path: await ensureRealisticModel(shape.options ?? {}), label: `${item}: ${shape.label}, random weights` };
  }
  const path = resolve(item);
  if (!existsSync(path))
    throw new Error(`--models: ${item} is neither a file nor one of ${Object.keys(SHAPES).join(', ')}`);
  return { path, label: path.split('/').pop()! };
}

/** What nvidia-smi says of the GPUs (name, memory, driver), or null without one. */
function nvidiaSmi(): string | null {
  const r = spawnSync('nvidia-smi', ['--query-gpu=name,memory.total,driver_version', '--format=csv,noheader'], {
    encoding: 'utf8',
  });
  return r.status === 0 ? r.stdout.trim() : null;
}

interface Level extends StreamLoadSummary {
  concurrency: number;
  tokensPerRequest: number;
  firstTokenMsP50: number;
  interTokenMsP50: number;
}

interface Run {
  model: string;
  engine: Engine;
  ok: boolean;
  failures: string[];
  /** The "model ready" log line's fields (engine, gpu or cpuBackend, threads ...). */
  ready: Record<string, unknown>;
  loadS: number;
  jsonText: string;
  streamText: string;
  /** Where the streamed text first differs from the JSON completion's (null: identical). */
  streamDivergesAt: number | null;
  levels: Level[];
  /** The end of the server's output when a check failed (a native abort prints its reason there). */
  serverLogTail?: string;
}

const PROMPTS = [
  'Tell me a story about a dragon.',
  'Once upon a time there was a little girl.',
  'Write a poem about the sea.',
  'Why is the sky blue?',
];

function body(model: string, content: string, maxTokens: number, stream: boolean): Record<string, unknown> {
  return {
    model,
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    temperature: 0,
    seed: 1,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

/** Non-streaming completion; returns its text or pushes what is wrong with the response onto `failures`. */
async function checkJson(h: HearthProcess, model: string, failures: string[]): Promise<string> {
  const res = await postChat(h.baseUrl, h.key, body(model, PROMPTS[0]!, 32, false));
  const json = (await res.json()) as {
    object?: string;
    choices?: { message?: { role?: string; content?: unknown }; finish_reason?: string }[];
    usage?: { completion_tokens?: number; prompt_tokens?: number };
  };
  const c = json.choices?.[0];
  if (res.status !== 200) failures.push(`JSON completion: status ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
  else if (
    json.object !== 'chat.completion' ||
    c?.message?.role !== 'assistant' ||
    typeof c.message.content !== 'string'
  )
    failures.push(`JSON completion: unexpected shape ${JSON.stringify(json).slice(0, 300)}`);
  else if (!(json.usage?.completion_tokens! > 0) || !(json.usage?.prompt_tokens! > 0))
    failures.push(`JSON completion: usage ${JSON.stringify(json.usage)}`);
  else if (c.finish_reason !== 'stop' && c.finish_reason !== 'length')
    failures.push(`JSON completion: finish_reason ${c.finish_reason}`);
  return typeof c?.message?.content === 'string' ? c.message.content : '';
}

/** Index of the first character where `a` and `b` differ; null when they are equal. */
function divergence(a: string, b: string): number | null {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

async function checkStream(target: StreamTarget, model: string, failures: string[]): Promise<string> {
  const agent = makeAgent(1);
  const r = await streamTimed(target, body(model, PROMPTS[0]!, 32, true), agent);
  agent.destroy();
  if (!r.ok) failures.push(`streaming completion: ${r.error}`);
  else if (r.completionTokens === null || r.completionTokens <= 0)
    failures.push('streaming completion: no usage chunk with completion_tokens');
  else if (r.finishReason !== 'stop' && r.finishReason !== 'length')
    failures.push(`streaming completion: finish_reason ${r.finishReason}`);
  return r.text;
}

/** `clients` loops of streaming requests until `durationS` has passed (at least one request each). */
async function level(
  target: StreamTarget,
  model: string,
  clients: number,
  durationS: number,
  maxTokens: number,
): Promise<Level> {
  const agent = makeAgent(clients);
  const results: TimedStream[] = [];
  const t0 = performance.now();
  await closedLoop({ clients, durationS, atLeastOnce: true }, async (n) => {
    results.push(await streamTimed(target, body(model, PROMPTS[n % PROMPTS.length]!, maxTokens, true), agent));
  });
  agent.destroy();
  const ok = results.filter((r) => r.ok);
  const summary = summarizeStreams(results, t0);
  return {
    concurrency: clients,
    ...summary,
    tokensPerRequest: ok.length ? summary.tokens / ok.length : Number.NaN,
    firstTokenMsP50: percentile(
      ok.map((r) => r.firstTokenMs),
      50,
    ),
    interTokenMsP50: percentile(
      ok.flatMap((r) => r.gapsMs),
      50,
    ),
  };
}

async function runOne(path: string, label: string, engine: Engine, o: Options): Promise<Run> {
  const run: Run = {
    model: label,
    engine,
    ok: false,
    failures: [],
    ready: {},
    loadS: Number.NaN,
    jsonText: '',
    streamText: '',
    streamDivergesAt: null,
    levels: [],
  };
  const t0 = performance.now();
  let h: HearthProcess | null = null;
  try {
    h = await startHearthProcess({
      args: [
        '--model',
        path,
        '--engine',
        engine,
        '--slots',
        String(o.slots),
        '--threads',
        String(o.threads),
        '--context-size',
        '2048',
        '--workers',
        '1',
      ],
      env: { HEARTH_LOG_LEVEL: 'info' },
    });
    await h.waitReady(300_000);
    run.loadS = (performance.now() - t0) / 1000;
    run.ready = modelReadyFields(h);
    log(`${engine} ready in ${run.loadS.toFixed(1)} s: ${JSON.stringify(run.ready)}`);
    if (run.ready['engine'] !== engine)
      run.failures.push(`asked for --engine ${engine}, loaded ${String(run.ready['engine'])}`);
    const gpu = run.ready['gpu'] as { backend?: unknown; gpuLayers?: number } | undefined;
    if (engine === 'node-llama-cpp' && !o.allowCpu && (gpu?.backend !== 'cuda' || !(gpu.gpuLayers! > 0))) {
      run.failures.push(`node-llama-cpp did not run on CUDA: gpu ${JSON.stringify(gpu)}`);
    }
    const models = (await (
      await fetch(`${h.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${h.key}` } })
    ).json()) as { data: { id: string }[] };
    const model = models.data[0]!.id;
    const target: StreamTarget = {
      baseUrl: h.baseUrl,
      path: '/api/inference/v1/chat/completions',
      headers: { authorization: `Bearer ${h.key}` },
    };
    run.jsonText = await checkJson(h, model, run.failures);
    run.streamText = await checkStream(target, model, run.failures);
    run.streamDivergesAt = divergence(run.jsonText, run.streamText);
    await level(target, model, o.slots, 0, 32); // warm-up: one request per slot
    for (const c of o.concurrency) {
      const l = await level(target, model, c, o.durationS, o.maxTokens);
      log(
        `${engine} ${c} client(s): ${l.tokensPerSecond.toFixed(1)} tok/s (${l.requests} requests, ${l.errors} errors${l.errors ? `: ${l.errorSamples.join('; ')}` : ''})`,
      );
      if (l.errors > 0)
        run.failures.push(`${c} clients: ${l.errors} of ${l.requests} requests failed: ${l.errorSamples.join('; ')}`);
      run.levels.push(l);
    }
  } catch (err) {
    run.failures.push(err instanceof Error ? err.message.slice(0, 2000) : String(err));
  } finally {
    if (h) {
      if (run.failures.length > 0) {
        run.serverLogTail = h.logs().slice(-4000);
        log(`${engine} failed; the server's output ends with:\n${run.serverLogTail}`);
      }
      await h.stop();
      rmSync(h.dataDir, { recursive: true, force: true });
    }
  }
  run.ok = run.failures.length === 0;
  return run;
}

function where(r: Run): string {
  const gpu = r.ready['gpu'] as { backend: string | false; devices: string[]; gpuLayers: number } | undefined;
  if (gpu)
    return gpu.backend === false
      ? 'CPU (no GPU backend loaded)'
      : `${gpu.backend} on ${gpu.devices.join(', ')}, ${gpu.gpuLayers} layers offloaded`;
  if (r.ready['cpuBackend']) return `CPU, ${String(r.ready['cpuBackend'])}, ${String(r.ready['threads'])} threads`;
  return 'n/a';
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const smi = nvidiaSmi();
  log(`nvidia-smi: ${smi ?? 'none'}`);
  const runs: Run[] = [];
  for (const item of o.models) {
    const { path, label } = await modelPath(item);
    for (const engine of o.engines) runs.push(await runOne(path, label, engine, o));
  }
  const rows = runs.map((r) => [
    r.model,
    `${r.engine}`,
    where(r),
    r.ok ? 'pass' : `FAIL: ${r.failures.join(' / ').slice(0, 300)}`,
    r.streamDivergesAt === null ? 'same' : `parts at char ${r.streamDivergesAt} of ${r.jsonText.length}`,
    fmt.num(r.loadS),
    ...o.concurrency.map((c) => {
      const l = r.levels.find((x) => x.concurrency === c);
      return l
        ? `${fmt.num(l.tokensPerSecond)} (${fmt.num(l.tokensPerRequest, 0)} tok/req, ITL p50 ${fmt.ms(l.interTokenMsP50)})`
        : 'n/a';
    }),
  ]);
  const md = [
    `GPU: ${smi ?? 'none found by nvidia-smi'}. \`--slots ${o.slots} --threads ${o.threads} --context-size 2048 --workers 1\`; streaming clients looping for ${o.durationS} s per level, max_tokens ${o.maxTokens}, temperature 0; tok/s = completion tokens received / wall time.`,
    '',
    table(
      [
        'model',
        'engine',
        'computes on',
        'checks (JSON, stream, CUDA)',
        'stream text vs JSON',
        'load s',
        ...o.concurrency.map((c) => `${c} client${c > 1 ? 's' : ''}: tok/s`),
      ],
      rows,
    ),
  ].join('\n');
  const data = { options: o, nvidiaSmi: smi, runs };
  if (o.resultsMd) recordResults('gpu-check', 'GPU check: node-llama-cpp on CUDA vs native on CPU', data, md);
  else console.log(`${md}\n\n${JSON.stringify(data, null, 2)}`);
  process.exitCode = runs.every((r) => r.ok) ? 0 : 1;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(2);
});
