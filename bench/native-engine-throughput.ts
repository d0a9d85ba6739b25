/**
 * Aggregate generation throughput of the native slot engine: 1, 4 and 8 concurrent greedy jobs of 128
 * tokens each, optionally next to node-llama-cpp's own context sequences on the same model.
 *
 *   node --import tsx bench/native-engine-throughput.ts [--model stories|random|realistic|<path>]...
 *     [--threads 2] [--tokens 128] [--concurrency 1,4,8] [--repeat 3] [--kv-unified] [--no-repack] [--no-thread-pool]
 *     [--thread-poll 0-100] [--compare] [--llama-server]
 *     [--json <file>]
 *
 * --compare adds node-llama-cpp's context sequences (one context, N sequences, same threads);
 * --llama-server adds llama.cpp's own server (bench/llama-server.ts: built once from the same llama.cpp
 * source, -np <max concurrency> -t <threads> -c 512 per slot, N concurrent non-streaming /completion calls
 * with the same token prompts, temperature 0).
 *
 * Defaults: stories260K and llama-2-tiny-random from ../shared/models, plus the 56M-parameter Q8_0
 * "realistic" llama (models/, written on first use) when its tokenizer source exists. Each job gets a
 * different prompt (no prefix sharing). Tokens/s = completion tokens of all jobs / wall time from the
 * first submit to the last onDone (prompt evaluation included, as a client sees it). Jobs may stop
 * early at an end-of-generation token; the token counts are printed. Each measurement runs `repeat`
 * times and reports the best and the median run (the best is the least disturbed on a shared machine).
 * Run on an otherwise idle machine: ggml's threads spin at barriers, so with more busy threads than
 * cores every engine slows down by orders of magnitude.
 */
import { writeFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { loadNativeSlotEngineInternal, type NativeSlotEngine } from '../src/worker/native-slot-engine.ts';
import { GREEDY_SAMPLING } from '../test/helpers/generation-job.ts';

interface BenchOptions {
  models: string[];
  threads: number;
  tokens: number;
  concurrency: number[];
  repeat: number;
  kvUnified: boolean;
  /** Native engine without repacked/AMX weights, like llama-server --no-repack. */
  noRepack: boolean;
  /** Native engine with ggml's per-decode threads instead of the persistent pool (A/B). */
  noThreadPool: boolean;
  threadPoll: number | undefined;
  compare: boolean;
  llamaServer: boolean;
  json: string | null;
}

const DEFAULT_BENCH_OPTIONS = {
  models: [] as string[],
  threads: 2,
  tokens: 128,
  concurrency: [1, 4, 8],
  repeat: 3,
  kvUnified: false,
  noRepack: false,
  noThreadPool: false,
  threadPoll: undefined,
  compare: false,
  llamaServer: false,
  json: null as string | null,
} satisfies Required<BenchOptions>;

const SHARED_MODELS = resolve(import.meta.dirname, '../../shared/models');
const GREEDY = GREEDY_SAMPLING;
const PROMPTS = [
  'Once upon a time',
  'The little dog ran',
  'Tom and Sue went to the park',
  'One day, a bird sang',
  'The big red ball',
  'Lily wanted a cake',
  'In a small house lived',
  'The sun was hot and',
];

interface Row {
  model: string;
  engine: 'native' | 'node-llama-cpp' | 'llama-server';
  concurrency: number;
  /** Of the best run. */
  completionTokens: number;
  seconds: number;
  tokensPerSecond: number;
  medianTokensPerSecond: number;
}

interface Measurement {
  completionTokens: number;
  seconds: number;
}

async function repeatRuns(
  times: number,
  once: (i: number) => Promise<Measurement>,
): Promise<Omit<Row, 'model' | 'engine' | 'concurrency'>> {
  const runs: (Measurement & { tps: number })[] = [];
  for (let i = 0; i < times; i++) {
    const m = await once(i);
    runs.push({ ...m, tps: m.completionTokens / m.seconds });
  }
  runs.sort((a, b) => b.tps - a.tps);
  const best = runs[0]!;
  return {
    completionTokens: best.completionTokens,
    seconds: best.seconds,
    tokensPerSecond: best.tps,
    medianTokensPerSecond: runs[Math.floor(runs.length / 2)]!.tps,
  };
}

function parseArgs(argv: string[]): BenchOptions {
  const o: BenchOptions = { ...DEFAULT_BENCH_OPTIONS, models: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--model') o.models.push(next());
    else if (a === '--threads') o.threads = Number(next());
    else if (a === '--tokens') o.tokens = Number(next());
    else if (a === '--concurrency') o.concurrency = next().split(',').map(Number);
    else if (a === '--repeat') o.repeat = Number(next());
    else if (a === '--kv-unified') o.kvUnified = true;
    else if (a === '--no-repack') o.noRepack = true;
    else if (a === '--no-thread-pool') o.noThreadPool = true;
    else if (a === '--thread-poll') o.threadPoll = Number(argv[++i]);
    else if (a === '--compare') o.compare = true;
    else if (a === '--llama-server') o.llamaServer = true;
    else if (a === '--json') o.json = next();
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

async function resolveModel(name: string): Promise<string> {
  if (name === 'stories') return resolve(SHARED_MODELS, 'stories260K.gguf');
  if (name === 'random') return resolve(SHARED_MODELS, 'llama-2-tiny-random.gguf');
  if (name === 'realistic') {
    const { ensureRealisticModel } = await import('../models/test-model-path.ts');
    return ensureRealisticModel();
  }
  return resolve(name);
}

async function defaultModels(): Promise<string[]> {
  const names = ['stories', 'random'];
  if (
    existsSync(resolve(SHARED_MODELS, 'llama-2-tiny-random.gguf')) &&
    existsSync(resolve(import.meta.dirname, '../models/test-model-path.ts'))
  ) {
    names.push('realistic');
  }
  return names;
}

async function runNative(
  engine: NativeSlotEngine,
  prompts: Uint32Array[],
  tokens: number,
): Promise<{ completionTokens: number; seconds: number }> {
  const started = performance.now();
  const results = await Promise.all(
    prompts.map(
      (promptTokens) =>
        new Promise<number>((done, fail) => {
          engine.submit(
            promptTokens,
            { maxTokens: tokens, stops: [], sampling: GREEDY, grammar: '', topLogprobs: -1, cachePartition: '' },
            {
              onText() {},
              onDone: (r) => done(r.completionTokens),
              onError: (e) => fail(new Error(e.message)),
            },
          );
        }),
    ),
  );
  return { completionTokens: results.reduce((a, b) => a + b, 0), seconds: (performance.now() - started) / 1000 };
}

async function runNodeLlamaCpp(
  model: LlamaModel,
  prompts: Uint32Array[],
  tokens: number,
  threads: number,
): Promise<{ completionTokens: number; seconds: number }> {
  const context = await model.createContext({
    contextSize: prompts.length * 512,
    sequences: prompts.length,
    threads,
    batchSize: 512,
  });
  try {
    const started = performance.now();
    const counts = await Promise.all(
      prompts.map(async (prompt) => {
        const sequence = context.getSequence();
        let n = 0;
        for await (const t of sequence.evaluate(Array.from(prompt) as Token[], { temperature: 0 })) {
          n++;
          if (n >= tokens || model.isEogToken(t)) break;
        }
        return n;
      }),
    );
    return { completionTokens: counts.reduce((a, b) => a + b, 0), seconds: (performance.now() - started) / 1000 };
  } finally {
    await context.dispose();
  }
}

async function runLlamaServer(baseUrl: string, prompts: Uint32Array[], tokens: number): Promise<Measurement> {
  const started = performance.now();
  const counts = await Promise.all(
    prompts.map(async (prompt) => {
      const r = await fetch(`${baseUrl}/completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          prompt: Array.from(prompt),
          n_predict: tokens,
          temperature: 0,
          stream: false,
          cache_prompt: true,
        }),
      });
      if (!r.ok) throw new Error(`llama-server /completion: ${r.status} ${await r.text()}`);
      const body = (await r.json()) as { tokens_predicted?: number; timings?: { predicted_n?: number } };
      return body.tokens_predicted ?? body.timings?.predicted_n ?? 0;
    }),
  );
  return { completionTokens: counts.reduce((a, b) => a + b, 0), seconds: (performance.now() - started) / 1000 };
}

async function benchModel(llama: Llama, modelPath: string, o: BenchOptions): Promise<Row[]> {
  const name = modelPath.split('/').pop()!;
  const vocab = await llama.loadModel({ modelPath, vocabOnly: !o.compare });
  const rows: Row[] = [];
  try {
    const maxN = Math.max(...o.concurrency);
    const prompts = Array.from({ length: maxN }, (_, i) =>
      Uint32Array.from([vocab.tokens.bos!, ...vocab.tokenize(PROMPTS[i % PROMPTS.length]!)]),
    );
    const engine = await loadNativeSlotEngineInternal({
      modelPath,
      contextSize: 512,
      slots: maxN,
      threads: o.threads,
      kvUnified: o.kvUnified,
      weightRepack: !o.noRepack,
      persistentThreads: !o.noThreadPool,
      ...(o.threadPoll !== undefined ? { threadPoll: o.threadPoll } : {}),
    });
    try {
      await runNative(engine, prompts.slice(0, 1), 16); // warm-up: graph allocation, page cache
      const salted = saltedPrompts(prompts);
      for (const n of o.concurrency) {
        const run = await repeatRuns(o.repeat, () => runNative(engine, salted(n), o.tokens));
        rows.push({ model: name, engine: 'native', concurrency: n, ...run });
        print(rows.at(-1)!);
      }
    } finally {
      await engine.dispose();
    }
    if (o.compare) {
      for (const n of o.concurrency) {
        const run = await repeatRuns(o.repeat, () => runNodeLlamaCpp(vocab, prompts.slice(0, n), o.tokens, o.threads));
        rows.push({ model: name, engine: 'node-llama-cpp', concurrency: n, ...run });
        print(rows.at(-1)!);
      }
    }
    if (o.llamaServer) {
      const { ensureLlamaServer, startLlamaServer } = await import('./llama-server.ts');
      const binary = await ensureLlamaServer();
      const maxN = Math.max(...o.concurrency);
      const server = await startLlamaServer({
        binary: binary.path,
        model: modelPath,
        slots: maxN,
        threads: o.threads,
        contextPerSlot: 512,
        extraArgs: o.noRepack ? ['--no-repack'] : [],
      });
      for (const note of server.notes) console.log(`llama-server: ${note}`);
      try {
        const prompts = Array.from({ length: maxN }, (_, i) =>
          Uint32Array.from([vocab.tokens.bos!, ...vocab.tokenize(PROMPTS[i % PROMPTS.length]!)]),
        );
        await runLlamaServer(server.baseUrl, prompts.slice(0, 1), 16);
        const salted = saltedPrompts(prompts);
        for (const n of o.concurrency) {
          const run = await repeatRuns(o.repeat, () => runLlamaServer(server.baseUrl, salted(n), o.tokens));
          rows.push({ model: name, engine: 'llama-server', concurrency: n, ...run });
          print(rows.at(-1)!);
        }
      } finally {
        await server.stop();
      }
    }
  } finally {
    await vocab.dispose();
  }
  return rows;
}

function print(r: Row): void {
  console.log(
    `${r.model.padEnd(40)} ${r.engine.padEnd(15)} x${String(r.concurrency).padEnd(3)} ` +
      `${String(r.completionTokens).padStart(5)} tokens in ${r.seconds.toFixed(2).padStart(6)} s = ${r.tokensPerSecond.toFixed(0).padStart(6)} tok/s ` +
      `(median: ${r.medianTokensPerSecond.toFixed(0)})`,
  );
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const names = o.models.length > 0 ? o.models : await defaultModels();
  console.log(
    `threads=${o.threads} tokens=${o.tokens} kvUnified=${o.kvUnified} weightRepack=${!o.noRepack} threadPool=${!o.noThreadPool} threadPoll=${o.threadPoll ?? 'default'} load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  const rows: Row[] = [];
  try {
    for (const n of names) rows.push(...(await benchModel(llama, await resolveModel(n), o)));
  } finally {
    await llama.dispose();
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (o.json) writeFileSync(o.json, `${JSON.stringify({ options: o, rows }, null, 2)}\n`);
}

await main();

/**
 * The first `n` of `prompts`, each with a second token that differs per job and run (from a counter each returned
 * function keeps), so the prefix cache does not skip prompt evaluation.
 */
function saltedPrompts(prompts: readonly Uint32Array[]): (n: number) => Uint32Array[] {
  let salt = 0;
  return (n) => prompts.slice(0, n).map((p) => Uint32Array.from([p[0]!, 100 + (salt++ % 300), ...p.subarray(1)]));
}
