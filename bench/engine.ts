/**
 * `npm run bench:engine`: Hearth's local engine vs llama.cpp's own llama-server vs the kernel ceiling,
 * side by side, on the same GGUF, the same llama.cpp release (llama-server is built from node-llama-cpp's
 * bundled source, see bench/llama-server.ts) and matching slots / threads / per-slot context / batch size.
 *
 *   npm run bench:engine -- --quick     the key rows in about ten minutes (56M and 0.5B Q8_0; 1 and 8
 *                                       clients; 16- and 500-token prompts; budgets 0 and 64; flood)
 *   npm run bench:engine                everything: 56M, 0.5B Q8_0, 0.5B Q4_K_M; 1, 4, 8, 16 clients;
 *                                       budgets 0, 32, 128; prefix cache and memory
 *
 * Per model shape (--shapes; the 0.5B files are written by models/realistic-llama.ts on first use, the
 * Q4_K_M one by llama-quantize): the kernel ceiling (bench/lib/kernel-ceiling.ts: llama-batched-bench on
 * node-llama-cpp's prebuilt libllama and the libggml-cpu-<variant>.so Hearth's process loads, named in
 * the output), the load levels below for each prompt length, the smooth-decode scenario (7 streams
 * decoding while a ~1,500-token prompt arrives; Hearth once per --budgets value of --step-token-budget)
 * and, on the first shape, the flood scenario (bench/lib/engine-scenarios.ts). A summary table per shape
 * gives Hearth / ceiling and Hearth / llama-server. --engines native,native-nopool,native-poll50 adds A/B
 * rows of the native engine without its persistent thread pool, or with idle threads spinning as llama-server's.
 *
 *   npm run bench:engine -- [--threads 2[,1,...]] [--slots 8[,16]] [--context-size 2048] [--batch-size 512]
 *     [--concurrency 1,4,8,16] [--duration 20] [--max-tokens 128] [--engines native,native-norepack,node-llama-cpp]
 *     [--no-llama-server] [--no-prefix] [--no-memory] [--memory-requests 100,1000] [--memory-concurrency 8]
 *     [--prefix-trials 3] [--rounds 1] [--model <gguf>] [--label <text>] [--no-results-md]
 *
 * For every (threads, slots) pair, the servers run one after the other (never two loaded at once):
 * llama-server, then `hearth serve --engine native` (reported unavailable when it does not come up as
 * native), then `hearth serve --engine node-llama-cpp`. Each gets:
 *  - a warm-up (one 32-token request per slot, discarded);
 *  - per concurrency level N: N clients, each looping streaming requests (POST .../chat/completions,
 *    stream: true, max_tokens, temperature 0, seed 1, a short prompt) until --duration seconds have passed
 *    (every client does at least one request). Per request: time to the first content token, gaps between
 *    content events, total. Aggregate tokens/s = completion tokens received (usage.completion_tokens of
 *    each stream) / wall time from the level's start to its last response. llama-server gets
 *    ignore_eos: true; Hearth has no such flag, so the tokens each request actually generated are reported
 *    (tok/req) and only those are counted;
 *  - prefix cache: a ~1,000-token system prompt (unique per trial) sent twice in a row with different
 *    user messages (max_tokens 8); first-token latency of request 2 vs request 1 (llama-server:
 *    cache_prompt: true), median over --prefix-trials;
 *  - memory: VmRSS (/proc/<pid>/status; the whole process, worker threads included) after 100 and after
 *    1,000 short requests (max_tokens 8, concurrency 8) and the growth ratio.
 * --rounds N (for a machine whose load changes): the load levels run N times, the servers taking turns
 * (llama-server, Hearth native, Hearth node-llama-cpp, llama-server, ...), each start a fresh process;
 * the table shows each server's best round per concurrency, the JSON all rounds, and Hearth / llama-server
 * also paired: the ratio of each round's two figures, median over the rounds, which the targets table judges.
 * Output: bench/out/engine-<timestamp>.json and a markdown section appended to bench/RESULTS.md.
 * The load generator runs in this process on the same cores as the server under test (same for both).
 */
import { cpuPerUnit, processCpuSeconds as cpuSeconds, type RoleCpu, threadCpu } from './lib/thread-cpu.ts';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultModelsDir } from '../src/config/default-model.ts';
import { DEFAULT_REALISTIC_LLAMA } from '../models/realistic-llama.ts';
import { chooseCpuKernels, type CpuKernelsMode } from '../src/engine/cpu-kernels.ts';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { startHearthProcess } from '../test/helpers/hearth-process.ts';
import { ensureLlamaServer, killLlamaServerBuild, type LlamaServerBinary, startLlamaServer } from './llama-server.ts';
import { describeMachine, machineLine, type MachineInfo } from './lib/machine.ts';
import { recordResults } from './lib/report.ts';
import { mean as meanAll, percentile as percentileAll } from './lib/stats.ts';
import {
  makeAgent,
  type StreamLoadSummary,
  type StreamTarget,
  streamTimed,
  streamTokens,
  summarizeStreams,
  type TimedStream,
} from './lib/timed-sse.ts';
import {
  floodPace,
  type FloodResult,
  type ScenarioServer,
  smoothDecode,
  type SmoothResult,
} from './lib/engine-scenarios.ts';
import { SHAPES } from './lib/model-shapes.ts';
import { modelReadyFields } from './lib/servers.ts';
import * as ceiling from './lib/kernel-ceiling.ts';

const ROOT = resolve(import.meta.dirname, '..');
const OUT_DIR = join(ROOT, 'bench/out');

type HearthEngine =
  | 'native'
  | 'native-norepack'
  | 'native-nopool'
  | 'native-poll50'
  | 'native-nocache'
  | 'native-nofront'
  | 'native-prebuilt'
  | 'node-llama-cpp';

/** Native-engine variants for A/B rows in one run: the `hearth serve` arguments each adds. */
const NATIVE_VARIANTS: Record<string, string[]> = {
  native: [],
  // Like-for-like with llama-server's --no-repack.
  'native-norepack': ['--weight-repack', 'false'],
  // ggml's per-decode threads (before the persistent pool).
  'native-nopool': ['--thread-pool', 'false'],
  // Persistent pool whose idle threads spin as llama-server's (--poll 50).
  'native-poll50': ['--thread-poll', '50'],
  // No host-memory prompt cache: only the slots' own KV is reused.
  'native-nocache': ['--prompt-cache-mib', '0'],
  // uWS alone on the public port (no managed HAProxy front): the front's cost.
  'native-nofront': ['--front', 'off'],
  // node-llama-cpp's prebuilt CPU kernels whatever --cpu-kernels auto would choose (before the native build).
  'native-prebuilt': ['--cpu-kernels', 'prebuilt'],
};
const engineOf = (e: HearthEngine) => (e in NATIVE_VARIANTS ? 'native' : e);

interface Options {
  threads: number[];
  slots: number[];
  contextSize: number;
  batchSize: number;
  concurrency: number[];
  durationS: number;
  maxTokens: number;
  engines: HearthEngine[];
  llamaServer: boolean;
  prefix: boolean;
  prefixTrials: number;
  memory: boolean;
  memoryRequests: number[];
  memoryConcurrency: number;
  model: string | null;
  label: string | null;
  resultsMd: boolean;
  /** Load rounds per server, alternating servers (prefix and memory in round 1 only). */
  rounds: number;
  /** Model shapes (SHAPES keys) or .gguf paths; --model sets one path. */
  shapes: string[];
  /** Prompt sizes per load level, in tokens (16: a short user message; larger: a unique long text). */
  promptLengths: number[];
  /** Kernel ceiling: llama-batched-bench on the libraries and CPU variant Hearth loads. */
  ceiling: boolean;
  /** Smooth decode: 7 streams decoding while a ~smoothPromptTokens prompt arrives, per Hearth --step-token-budget. */
  smooth: boolean;
  budgets: number[];
  /** Smooth decode: Hearth once per --prefill-step-percent value here (budget 0). */
  paces: number[];
  smoothPromptTokens: number;
  /** Pace of `floodStreams` streams under an autocannon flood on the models route (first shape only unless floodAllShapes). */
  flood: boolean;
  floodAllShapes: boolean;
  floodStreams: number;
  floodConnections: number;
  /** Extra `hearth serve` arguments (e.g. "--thread-pool false"). */
  hearthArgs: string[];
  quick: boolean;
}

const DEFAULTS: Options = {
  threads: [2],
  slots: [8],
  contextSize: 2048,
  batchSize: 512,
  concurrency: [1, 4, 8, 16],
  durationS: 20,
  maxTokens: 128,
  engines: ['native', 'node-llama-cpp'],
  llamaServer: true,
  prefix: true,
  prefixTrials: 3,
  memory: true,
  memoryRequests: [100, 1000],
  memoryConcurrency: 8,
  model: null,
  label: null,
  resultsMd: true,
  rounds: 1,
  shapes: ['56m', '0.5b-q8', '0.5b-q4km'],
  promptLengths: [16, 500],
  ceiling: true,
  smooth: true,
  budgets: [0, 32, 128],
  paces: [150, 200],
  smoothPromptTokens: 1500,
  flood: true,
  floodAllShapes: false,
  floodStreams: 8,
  floodConnections: 50,
  hearthArgs: [],
  quick: false,
};

/** --quick: the key rows in about ten minutes on 2 cores. */
const QUICK: Partial<Options> = {
  shapes: ['56m', '0.5b-q8'],
  concurrency: [1, 8],
  promptLengths: [16, 500],
  durationS: 8,
  engines: ['native'],
  prefix: false,
  memory: false,
  budgets: [0, 64],
  paces: [150],
  quick: true,
};

const USAGE = `usage: npm run bench:engine -- [--threads 2[,1]] [--slots 8] [--context-size 2048] [--batch-size 512]
  [--concurrency 1,4,8,16] [--duration 20] [--max-tokens 128] [--engines native,native-norepack,native-nopool,native-poll50,node-llama-cpp]
  [--no-llama-server] [--no-prefix] [--prefix-trials 3] [--no-memory] [--memory-requests 100,1000]
  [--memory-concurrency 8] [--rounds 1] [--model <gguf>] [--label <text>] [--no-results-md]
  [--quick] [--shapes 56m,0.5b-q8,0.5b-q4km|<gguf>] [--prompt-lengths 16,500] [--no-ceiling] [--no-smooth]
  [--budgets 0,32,128] [--paces 150,200] [--smooth-prompt-tokens 1500] [--no-flood] [--flood-all-shapes] [--flood-streams 8]
  [--flood-connections 50] [--hearth-args "--thread-pool false"]`;

/** The Options fields of one type. */
type FieldsOf<T> = { [K in keyof Options]: Options[K] extends T ? K : never }[keyof Options];
/** Flags that set one field: to a positive integer, to a list of them, or to a fixed boolean. */
const ONE_INT_FLAGS: Record<string, FieldsOf<number>> = {
  '--context-size': 'contextSize',
  '--context': 'contextSize',
  '--batch-size': 'batchSize',
  '--max-tokens': 'maxTokens',
  '--prefix-trials': 'prefixTrials',
  '--memory-concurrency': 'memoryConcurrency',
  '--rounds': 'rounds',
  '--smooth-prompt-tokens': 'smoothPromptTokens',
  '--flood-streams': 'floodStreams',
  '--flood-connections': 'floodConnections',
};
const INT_LIST_FLAGS: Record<string, FieldsOf<number[]>> = {
  '--threads': 'threads',
  '--slots': 'slots',
  '--concurrency': 'concurrency',
  '--prompt-lengths': 'promptLengths',
};
const SWITCH_FLAGS: Record<string, [FieldsOf<boolean>, boolean]> = {
  '--no-llama-server': ['llamaServer', false],
  '--no-prefix': ['prefix', false],
  '--no-memory': ['memory', false],
  '--no-results-md': ['resultsMd', false],
  '--no-ceiling': ['ceiling', false],
  '--no-smooth': ['smooth', false],
  '--no-flood': ['flood', false],
  '--flood-all-shapes': ['floodAllShapes', true],
};

function parseArgs(argv: string[]): Options {
  const o: Options = { ...DEFAULTS, ...(argv.includes('--quick') ? QUICK : {}) };
  const nonNegative = (s: string, flag: string): number[] => {
    const v = s.split(',').map((x) => Number(x.trim()));
    if (v.length === 0 || v.some((n) => !Number.isInteger(n) || n < 0))
      throw new Error(`${flag}: expected integers >= 0, got ${s}`);
    return v;
  };
  const ints = (s: string, flag: string): number[] => {
    const v = s.split(',').map((x) => Number(x.trim()));
    if (v.length === 0 || v.some((n) => !Number.isInteger(n) || n <= 0))
      throw new Error(`${flag}: expected positive integers, got ${s}`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const next = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (Object.hasOwn(ONE_INT_FLAGS, flag)) {
      o[ONE_INT_FLAGS[flag]!] = ints(next(), flag)[0]!;
      continue;
    }
    if (Object.hasOwn(INT_LIST_FLAGS, flag)) {
      o[INT_LIST_FLAGS[flag]!] = ints(next(), flag);
      continue;
    }
    if (Object.hasOwn(SWITCH_FLAGS, flag)) {
      const [field, value] = SWITCH_FLAGS[flag]!;
      o[field] = value;
      continue;
    }
    switch (flag) {
      case '--duration': {
        const d = Number(next());
        if (!(d > 0)) throw new Error('--duration: expected seconds > 0');
        o.durationS = d;
        break;
      }
      case '--engines':
      case '--engine': {
        const list = next()
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '' && s !== 'none');
        for (const e of list)
          if (!(e in NATIVE_VARIANTS) && e !== 'node-llama-cpp')
            throw new Error(
              `--engines: unknown engine ${e} (${[...Object.keys(NATIVE_VARIANTS), 'node-llama-cpp'].join(', ')})`,
            );
        o.engines = list as HearthEngine[];
        break;
      }
      case '--memory-requests':
        o.memoryRequests = ints(next(), flag).sort((x, y) => x - y);
        break;
      case '--model':
        o.model = resolve(next());
        break;
      case '--label':
        o.label = next();
        break;
      case '--quick':
        break;
      case '--shapes':
        o.shapes = next()
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
        break;
      case '--budgets':
        o.budgets = nonNegative(next(), flag);
        break;
      case '--paces':
        o.paces = nonNegative(next(), flag).filter((x) => x > 0);
        break;
      case '--hearth-args':
        o.hearthArgs = next()
          .split(/\s+/)
          .filter((s) => s !== '');
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${a}\n${USAGE}`);
    }
  }
  return o;
}

const finite = (v: readonly number[]) => v.filter(Number.isFinite);
const percentile = (v: readonly number[], p: number) => percentileAll(finite(v), p);
const mean = (v: readonly number[]) => meanAll(finite(v));
const median = (v: readonly number[]) => percentile(v, 50);
const p50p95 = (v: readonly number[]) => ({ p50: percentile(v, 50), p95: percentile(v, 95) });
const ratio = (a: number | null | undefined, b: number | null | undefined) =>
  a === null ||
  a === undefined ||
  b === null ||
  b === undefined ||
  !Number.isFinite(a) ||
  !Number.isFinite(b) ||
  b === 0
    ? Number.NaN
    : a / b;
/**
 * Hearth / llama-server per round, median over the rounds (`--rounds` > 1): each round's two figures were measured
 * minutes apart, so on a machine whose speed drifts this pairs like with like, where each server's best round may
 * come from different moments. NaN with fewer than two paired rounds.
 */
function pairedRatio(
  hearth: TargetRun | undefined,
  ls: TargetRun | undefined,
  concurrency: number,
  promptLength: number,
): number {
  const pick = (levels: LevelResult[] | undefined) =>
    levels?.find((l) => l.concurrency === concurrency && l.promptLength === promptLength);
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(hearth?.rounds?.length ?? 0, ls?.rounds?.length ?? 0); i++) {
    const r = ratio(pick(hearth!.rounds![i])?.tokensPerSecond, pick(ls!.rounds![i])?.tokensPerSecond);
    if (Number.isFinite(r)) ratios.push(r);
  }
  if (ratios.length < 2) return Number.NaN;
  ratios.sort((x, y) => x - y);
  const mid = ratios.length >> 1;
  return ratios.length % 2 === 1 ? ratios[mid]! : (ratios[mid - 1]! + ratios[mid]!) / 2;
}
/** Fixed decimals, '–' for missing. */
const fmt = (n: number | null | undefined, digits = 1) =>
  n === null || n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(digits);

const log = (s: string) => process.stderr.write(`[bench:engine ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

// ---------------------------------------------------------------------------------------------------
// Targets

interface Target {
  /** llama-server | hearth-native | hearth-node-llama-cpp */
  name: string;
  kind: 'llama-server' | 'hearth';
  pid: number;
  stream: StreamTarget;
  /** Added to every request body. */
  extraBody: Record<string, unknown>;
  /** The models route, flooded without credentials in the flood scenario. */
  floodPath: string;
  model: string;
  /** What the server says about itself (engine actually running, threads ...). */
  info: Record<string, unknown>;
  stop(): Promise<unknown>;
  /** Synchronous SIGKILL, for this process's exit. */
  kill(): void;
  logs(): string;
}

/** SIGKILLs this process's remaining direct children (a server still starting up). */
function killChildProcesses(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return;
  }
  for (const pid of entries) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/** Servers started and not yet stopped: killed if this process is interrupted or exits. */
const liveTargets = new Set<Target>();
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    process.stderr.write(`[bench:engine] ${sig}: stopping servers\n`);
    killLlamaServerBuild();
    for (const t of liveTargets) t.kill();
    killChildProcesses();
    process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
  });
}
process.on('exit', () => {
  for (const t of liveTargets) t.kill();
});

async function startLlamaServerTarget(
  bin: LlamaServerBinary,
  model: string,
  slots: number,
  threads: number,
  o: Options,
): Promise<Target> {
  const s = await startLlamaServer({
    binary: bin.path,
    model,
    slots,
    threads,
    contextPerSlot: o.contextSize,
    extraArgs: ['-b', String(Math.max(o.batchSize, slots)), '-ub', String(Math.min(Math.max(o.batchSize, slots), 512))],
  });
  let props: Record<string, unknown> = {};
  try {
    const r = await fetch(`${s.baseUrl}/props`);
    if (r.ok) {
      const p = (await r.json()) as Record<string, unknown>;
      props = {
        total_slots: p['total_slots'],
        build_info: p['build_info'],
        n_ctx: (p['default_generation_settings'] as Record<string, unknown> | undefined)?.['n_ctx'],
      };
    }
  } catch {
    /* optional */
  }
  return {
    name: 'llama-server',
    kind: 'llama-server',
    pid: s.pid,
    stream: { baseUrl: s.baseUrl, path: '/v1/chat/completions' },
    extraBody: { ignore_eos: true, cache_prompt: true },
    floodPath: '/v1/models',
    model: 'bench',
    info: { args: s.args, notes: s.notes, ...props },
    stop: () => s.stop(),
    kill: () => {
      if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
    },
    logs: () => s.logs(),
  };
}

/** The ggml CPU backend libraries a process has mapped (node-llama-cpp picks one variant per CPU). */
function loadedCpuBackends(pid: number): string[] {
  try {
    return [...new Set(readFileSync(`/proc/${pid}/maps`, 'utf8').match(/libggml-cpu[^/\s]*\.so/g) ?? [])];
  } catch {
    return [];
  }
}

/**
 * The CPU library Hearth's native loop loads for this model: `--cpu-kernels auto` (the default, unless the run
 * passes --cpu-kernels in --hearth-args) chooses between the prebuilt `variant` and the native build by timing
 * them; this runs that same choice first (its cache then gives Hearth's start the same answer, which
 * summaryMarkdown shows beside Hearth's own report).
 */
async function ceilingLibrary(variant: string, modelPath: string, slots: number, o: Options): Promise<string> {
  const flag = o.hearthArgs.indexOf('--cpu-kernels');
  const mode = (flag >= 0 ? o.hearthArgs[flag + 1] : 'auto') as CpuKernelsMode;
  const choice = await chooseCpuKernels({
    mode,
    modelPath,
    slots,
    threads: o.threads[0]!,
    cores: Math.max(1, availableParallelism()),
    cacheFile: join(defaultModelsDir(), 'cpu-kernels.json'),
  });
  log(`  cpu kernels for this model: ${choice.kernels} (${choice.why})`);
  return choice.kernels === 'native' ? join(ROOT, 'native', 'build', 'cpu-kernels', 'libggml-cpu-native.so') : variant;
}

async function startHearthTarget(
  engine: HearthEngine,
  model: string,
  slots: number,
  threads: number,
  o: Options,
  extraArgs: string[] = [],
): Promise<Target> {
  const h = await startHearthProcess({
    // native-norepack: the native engine without repacked (AMX) weights, like-for-like with llama-server's --no-repack.
    args: [
      '--model',
      model,
      '--engine',
      engineOf(engine),
      ...(NATIVE_VARIANTS[engine] ?? []),
      '--slots',
      String(slots),
      '--threads',
      String(threads),
      '--context-size',
      String(o.contextSize),
      '--batch-size',
      String(o.batchSize),
      '--workers',
      '1',
      ...o.hearthArgs,
      ...extraArgs,
    ],
    env: { HEARTH_LOG_LEVEL: 'info' },
  });
  try {
    await h.waitReady(180_000);
  } catch (e) {
    await h.stop();
    throw e;
  }
  const readyInfo = modelReadyFields(h);
  const models = (await (
    await fetch(`${h.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${h.key}` } })
  ).json()) as { data: { id: string; hearth?: Record<string, unknown> }[] };
  const m = models.data[0]!;
  return {
    name: `hearth-${engine}`,
    kind: 'hearth',
    pid: h.proc.pid!,
    stream: {
      baseUrl: h.baseUrl,
      path: '/api/inference/v1/chat/completions',
      headers: { authorization: `Bearer ${h.key}` },
    },
    extraBody: {},
    floodPath: '/api/inference/v1/models',
    model: m.id,
    info: {
      engine: m.hearth?.['engine'] ?? readyInfo['engine'],
      threads: readyInfo['threads'],
      contextSize: readyInfo['contextSize'],
      slots: m.hearth?.['slots'],
      requestedEngine: engine,
      threadPool: readyInfo['threadPool'],
      cpuBackend: readyInfo['cpuBackend'],
      calibration: readyInfo['calibration'],
      args: [...o.hearthArgs, ...extraArgs],
      ggmlCpuBackend: loadedCpuBackends(h.proc.pid!),
    },
    stop: async () => {
      await h.stop();
      rmSync(h.dataDir, { recursive: true, force: true });
    },
    kill: () => {
      if (h.proc.exitCode === null && h.proc.signalCode === null) h.proc.kill('SIGKILL');
      rmSync(h.dataDir, { recursive: true, force: true });
    },
    logs: () => h.logs(),
  };
}

// ---------------------------------------------------------------------------------------------------
// Load

const SHORT_PROMPTS = [
  'Tell me a story about a dragon.',
  'Write a poem about the sea.',
  'Explain how rain forms.',
  'Describe a busy market.',
  'What makes a good friend?',
  'List some uses of a spoon.',
  'Why is the sky blue?',
  'Describe your ideal garden.',
  'Tell me about mountains.',
  'How do birds fly?',
  'Write a short letter to a neighbour.',
  'Describe a winter morning.',
  'What is a library for?',
  'Tell me about trains.',
  'Describe an old castle.',
  'How do bees make honey?',
];

function chatBody(
  t: Target,
  messages: { role: string; content: string }[],
  maxTokens: number,
): Record<string, unknown> {
  return {
    model: t.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: maxTokens,
    temperature: 0,
    seed: 1,
    ...t.extraBody,
  };
}

interface LevelResult extends StreamLoadSummary {
  concurrency: number;
  /** Prompt size asked for, in tokens (promptTokens says what the server counted). */
  promptLength: number;
  tokensPerRequest: { mean: number; min: number; max: number };
  contentEventsPerRequest: number;
  finishReasons: Record<string, number>;
  promptTokens: number;
  firstTokenMs: { p50: number; p95: number; max: number };
  interTokenMs: { p50: number; p95: number; p99: number };
  totalMs: { p50: number; p95: number };
  serverCpuS: number | null;
  /** The server's CPU microseconds per generated token by thread role (bench/lib/thread-cpu.ts), largest first. */
  cpuPerToken: RoleCpu[] | null;
  loadAvg1Before: number;
  /** Connections the server closed before answering, retried (see bench/lib/timed-sse.ts). */
  connectionRetries: number;
}

/** `clients` parallel loops; each sends `next(i)` requests until `until()` says stop (>= 1 request each). */
async function drive(
  t: Target,
  agent: http.Agent,
  clients: number,
  body: (n: number) => Record<string, unknown>,
  more: (done: number) => boolean,
): Promise<{ results: TimedStream[]; t0: number; t1: number }> {
  const results: TimedStream[] = [];
  let issued = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      let mine = 0;
      while (mine === 0 || more(issued)) {
        const n = issued++;
        mine++;
        results.push(await streamTimed(t.stream, body(n), agent));
      }
    }),
  );
  return { results, t0, t1: performance.now() };
}

/** The user message of request `n` at a prompt size of about `tokens` tokens (unique per request above 16: no prefix reuse). */
function promptFor(tokens: number, n: number, nonce: string): string {
  if (tokens <= 16) return SHORT_PROMPTS[n % SHORT_PROMPTS.length]!;
  return `${longSystemPrompt(`${nonce}-${n}`, Math.round(tokens / 1.32))}\nSummarise the notes.`;
}

async function runLevel(
  t: Target,
  concurrency: number,
  o: Options,
  promptLength = 16,
  maxTokens = o.maxTokens,
): Promise<LevelResult> {
  const agent = makeAgent(concurrency);
  const load1 = loadavg()[0]!;
  const cpu0 = cpuSeconds(t.pid);
  const threads0 = threadCpu(t.pid);
  const deadline = performance.now() + o.durationS * 1000;
  const { results, t0 } = await drive(
    t,
    agent,
    concurrency,
    (n) =>
      chatBody(
        t,
        [
          {
            role: 'user',
            content: promptFor(promptLength, n, `${t.name}-${concurrency}-${performance.now().toFixed(0)}`),
          },
        ],
        maxTokens,
      ),
    () => performance.now() < deadline,
  );
  const cpu1 = cpuSeconds(t.pid);
  const threads1 = threadCpu(t.pid);
  agent.destroy();
  const ok = results.filter((r) => r.ok);
  const finishReasons: Record<string, number> = {};
  for (const r of ok) finishReasons[r.finishReason ?? 'none'] = (finishReasons[r.finishReason ?? 'none'] ?? 0) + 1;
  const gaps = ok.flatMap((r) => r.gapsMs);
  const perReq = ok.map(streamTokens);
  const firstTokenMs = ok.map((r) => r.firstTokenMs);
  const streams = summarizeStreams(results, t0);
  return {
    concurrency,
    promptLength,
    ...streams,
    tokensPerRequest: { mean: mean(perReq), min: Math.min(...perReq), max: Math.max(...perReq) },
    contentEventsPerRequest: mean(ok.map((r) => r.contentEvents)),
    finishReasons,
    promptTokens: median(ok.map((r) => r.promptTokens ?? Number.NaN)),
    firstTokenMs: { ...p50p95(firstTokenMs), max: Math.max(...firstTokenMs) },
    interTokenMs: { p50: percentile(gaps, 50), p95: percentile(gaps, 95), p99: percentile(gaps, 99) },
    totalMs: p50p95(ok.map((r) => r.totalMs)),
    serverCpuS: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null,
    cpuPerToken: cpuPerUnit(threads0, threads1, streams.tokens),
    loadAvg1Before: load1,
    connectionRetries: results.reduce((n, r) => n + r.retries, 0),
  };
}

async function warmUp(t: Target, slots: number): Promise<void> {
  const agent = makeAgent(slots);
  const { results } = await drive(
    t,
    agent,
    slots,
    (n) => chatBody(t, [{ role: 'user', content: `Warm-up ${n}: ${SHORT_PROMPTS[n % SHORT_PROMPTS.length]}` }], 32),
    () => false,
  );
  agent.destroy();
  const bad = results.filter((r) => !r.ok);
  if (bad.length) throw new Error(`warm-up failed on ${t.name}: ${bad[0]!.error}`);
}

// ---------------------------------------------------------------------------------------------------
// Prefix cache

/** Deterministic English-like text of `words` words (about 1.2-1.4 Llama 2 tokens a word). */
function longSystemPrompt(nonce: string, words = 760): string {
  const vocab = (
    'the of and to in is was for on that with as by at from it his an were are which this be or had not but ' +
    'have one their all new more first two after who its also they been has when there other into time would year most only ' +
    'over city some made school can between world three where these under four united later while during since people state ' +
    'such about many well known river house early name part used north music same through both before long team second high ' +
    'county south family game until could each then them called work life area around east group west last water small book'
  ).split(' ');
  let x = 0x9e3779b9;
  const rnd = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
  const out: string[] = [`Session ${nonce}. You are a helpful assistant. Background notes follow.`];
  let sentence: string[] = [];
  for (let i = 0; i < words; i++) {
    sentence.push(vocab[Math.floor(rnd() * vocab.length)]!);
    if (sentence.length >= 8 + Math.floor(rnd() * 8)) {
      const s = sentence.join(' ');
      out.push(`${s[0]!.toUpperCase()}${s.slice(1)}.`);
      sentence = [];
    }
  }
  if (sentence.length) out.push(`${sentence.join(' ')}.`);
  return out.join(' ');
}

interface PrefixTrial {
  promptTokens1: number | null;
  promptTokens2: number | null;
  firstTokenMs1: number;
  firstTokenMs2: number;
  cachedTokens1: number | null;
  cachedTokens2: number | null;
}

interface PrefixResult {
  trials: PrefixTrial[];
  firstTokenMs1: number;
  firstTokenMs2: number;
  ratio2to1: number;
  promptTokens: number;
  cachedTokens2: number;
}

async function runPrefix(t: Target, o: Options, runId: string): Promise<PrefixResult> {
  const agent = makeAgent(1);
  const trials: PrefixTrial[] = [];
  for (let i = 0; i < o.prefixTrials; i++) {
    const system = longSystemPrompt(`${runId}-${t.name}-${i}`);
    /** One question after the shared system prompt: the second finds the first's prefix cached. */
    const ask = (question: string) =>
      streamTimed(
        t.stream,
        chatBody(
          t,
          [
            { role: 'system', content: system },
            { role: 'user', content: question },
          ],
          8,
        ),
        agent,
      );
    const r1 = await ask('Summarise the notes in one line.');
    const r2 = await ask('Which river is mentioned first?');
    if (!r1.ok || !r2.ok) throw new Error(`prefix request failed on ${t.name}: ${r1.error ?? r2.error}`);
    trials.push({
      promptTokens1: r1.promptTokens,
      promptTokens2: r2.promptTokens,
      firstTokenMs1: r1.firstTokenMs,
      firstTokenMs2: r2.firstTokenMs,
      cachedTokens1: r1.cachedTokens,
      cachedTokens2: r2.cachedTokens,
    });
  }
  agent.destroy();
  const f1 = median(trials.map((x) => x.firstTokenMs1));
  const f2 = median(trials.map((x) => x.firstTokenMs2));
  return {
    trials,
    firstTokenMs1: f1,
    firstTokenMs2: f2,
    ratio2to1: ratio(f2, f1),
    promptTokens: median(trials.map((x) => x.promptTokens2 ?? Number.NaN)),
    cachedTokens2: median(trials.map((x) => x.cachedTokens2 ?? Number.NaN)),
  };
}

// ---------------------------------------------------------------------------------------------------
// Memory

function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

interface MemoryResult {
  rssAfterLoadMiB: number | null;
  points: { requests: number; rssMiB: number | null; hwmMiB: number | null; errors: number; seconds: number }[];
  growthRatio: number;
}

async function runMemory(t: Target, o: Options, rssAfterLoadKb: number | null): Promise<MemoryResult> {
  const agent = makeAgent(o.memoryConcurrency);
  const points: MemoryResult['points'] = [];
  let done = 0;
  for (const target of o.memoryRequests) {
    const count = target - done;
    if (count <= 0) continue;
    const start = performance.now();
    const base = done;
    const { results } = await drive(
      t,
      agent,
      Math.min(o.memoryConcurrency, count),
      (n) =>
        chatBody(
          t,
          [{ role: 'user', content: `Request ${base + n}: ${SHORT_PROMPTS[(base + n) % SHORT_PROMPTS.length]}` }],
          8,
        ),
      (issued) => issued < count,
    );
    done = target;
    await new Promise((r) => setTimeout(r, 500));
    const rss = procStatusKb(t.pid, 'VmRSS');
    const hwm = procStatusKb(t.pid, 'VmHWM');
    points.push({
      requests: target,
      rssMiB: rss === null ? null : rss / 1024,
      hwmMiB: hwm === null ? null : hwm / 1024,
      errors: results.filter((r) => !r.ok).length,
      seconds: (performance.now() - start) / 1000,
    });
    log(`  ${t.name} memory: ${target} requests -> RSS ${fmt(rss === null ? null : rss / 1024)} MiB`);
  }
  agent.destroy();
  const first = points[0]?.rssMiB ?? null;
  const last = points.at(-1)?.rssMiB ?? null;
  return {
    rssAfterLoadMiB: rssAfterLoadKb === null ? null : rssAfterLoadKb / 1024,
    points,
    growthRatio: ratio(last, first),
  };
}

// ---------------------------------------------------------------------------------------------------
// Orchestration

interface TargetRun {
  name: string;
  available: boolean;
  unavailableReason?: string;
  info: Record<string, unknown>;
  levels: LevelResult[];
  prefix: PrefixResult | null;
  memory: MemoryResult | null;
  /** A failed section (prefix) that did not stop the others. */
  sectionErrors: string[];
  /** Every round's levels (levels = the best round per concurrency). */
  rounds?: LevelResult[][];
  error?: string;
  smooth: SmoothResult | null;
  flood: FloodResult | null;
}

/** A target's run before anything ran: unavailable, no results. */
function emptyRun(name: string): TargetRun {
  return {
    name,
    available: false,
    info: {},
    levels: [],
    prefix: null,
    memory: null,
    sectionErrors: [],
    smooth: null,
    flood: null,
  };
}

interface ConfigRun {
  slots: number;
  threads: number;
  contextSize: number;
  batchSize: number;
  targets: TargetRun[];
}

interface EngineMachine {
  info: MachineInfo;
  simd: string[];
  kernel: string;
  /** 1, 5, 15 minute load averages when the run started. */
  loadAvgAtStart: number[];
}

function machine(): EngineMachine {
  let flags: string[] = [];
  try {
    flags = (/^flags\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').split(' ');
  } catch {
    /* non-Linux */
  }
  return {
    info: describeMachine(),
    simd: ['avx2', 'avx512f', 'avx512_vnni', 'avx_vnni', 'amx_tile', 'amx_int8'].filter((f) => flags.includes(f)),
    kernel: spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim(),
    loadAvgAtStart: loadavg().map((x) => +x.toFixed(2)),
  };
}

async function modelShape(path: string, isDefault: boolean): Promise<Record<string, unknown>> {
  const shape: Record<string, unknown> = { path, sizeMiB: 0 };
  try {
    shape['sizeMiB'] = +(statSync(path).size / 2 ** 20).toFixed(1);
  } catch {
    /* */
  }
  if (isDefault)
    Object.assign(shape, {
      kind: 'realistic-llama (random weights, Llama 2 tokenizer)',
      ...DEFAULT_REALISTIC_LLAMA,
      tokenizerSource: undefined,
    });
  return shape;
}

/** What one model shape runs besides the load levels. */
interface ShapePlan {
  maxTokens: number;
  /** Run the smooth-decode scenario on this server (budget is what its command line says). */
  smooth: boolean;
  flood: boolean;
  /** Only the smooth scenario (extra Hearth starts for other --step-token-budget values). */
  smoothOnly?: boolean;
  /** The long prompt of the smooth scenario (unique per server start). */
  longPrompt: () => string;
}

async function runTarget(
  name: string,
  start: () => Promise<Target>,
  cfg: ConfigRun,
  o: Options,
  runId: string,
  expectEngine: HearthEngine | undefined,
  extras: boolean,
  plan: ShapePlan,
): Promise<TargetRun> {
  const run = emptyRun(name);
  let t: Target;
  log(`starting ${name} (slots ${cfg.slots}, threads ${cfg.threads}, context ${cfg.contextSize}/slot)`);
  try {
    t = await start();
    liveTargets.add(t);
  } catch (e) {
    run.unavailableReason = (e instanceof Error ? e.message : String(e)).slice(0, 2000);
    log(`${name} unavailable: ${run.unavailableReason.split('\n')[0]}`);
    return run;
  }
  run.info = t.info;
  try {
    // native-norepack is the native engine with --weight-repack false.
    if (expectEngine && t.info['engine'] !== engineOf(expectEngine)) {
      run.unavailableReason = `requested --engine ${expectEngine}, server runs ${String(t.info['engine'])}`;
      log(`${name} unavailable: ${run.unavailableReason}`);
      return run;
    }
    run.available = true;
    const rssAfterLoad = procStatusKb(t.pid, 'VmRSS');
    await warmUp(t, cfg.slots);
    const server: ScenarioServer = {
      stream: t.stream,
      body: (messages, maxTokens) => chatBody(t, messages, maxTokens),
    };
    if (plan.smooth && (plan.smoothOnly || extras)) {
      run.smooth = await smoothDecode(server, {
        decoders: 7,
        decoderMaxTokens: Math.max(64, cfg.contextSize - 128),
        longPrompt: plan.longPrompt(),
      });
      log(
        `  ${name} smooth: long prompt ${fmt(run.smooth.longPromptTokens, 0)} tokens, TTFT ${fmt(run.smooth.longTtftMs, 0)} ms; decoders' median gap ${fmt(run.smooth.medianGapMs)} ms, longest during prefill ${fmt(run.smooth.maxGapDuringMs)} ms (x${fmt(run.smooth.gapRatio, 2)}; per token x${fmt(run.smooth.tokenGapRatio, 2)})`,
      );
    }
    if (plan.smoothOnly) return run;
    for (const pl of o.promptLengths)
      for (const c of o.concurrency) {
        const r = await runLevel(t, c, o, pl, plan.maxTokens);
        run.levels.push(r);
        log(
          `  ${name} prompt ${pl} c=${c}: ${fmt(r.tokensPerSecond)} tok/s, ${r.requests} req (${r.errors} err), tok/req ${fmt(r.tokensPerRequest.mean)}, first-token p50 ${fmt(r.firstTokenMs.p50, 0)} ms p95 ${fmt(r.firstTokenMs.p95, 0)} ms, inter-token p50 ${fmt(r.interTokenMs.p50)} ms${r.errors ? `; errors: ${r.errorSamples.join(' | ')}` : ''}`,
        );
      }
    if (o.prefix && extras) {
      try {
        run.prefix = await runPrefix(t, o, runId);
        log(
          `  ${name} prefix: ${fmt(run.prefix.promptTokens, 0)} prompt tokens, first token ${fmt(run.prefix.firstTokenMs1, 0)} ms -> ${fmt(run.prefix.firstTokenMs2, 0)} ms (cached ${fmt(run.prefix.cachedTokens2, 0)})`,
        );
      } catch (e) {
        run.sectionErrors.push(`prefix: ${e instanceof Error ? e.message : String(e)}`);
        log(`  ${name} prefix failed: ${run.sectionErrors.at(-1)}`);
      }
    }
    if (o.memory && extras) run.memory = await runMemory(t, o, rssAfterLoad);
    if (plan.flood && extras) {
      run.flood = await floodPace(server, {
        streams: o.floodStreams,
        durationS: o.durationS,
        maxTokens: plan.maxTokens,
        floodUrl: `${t.stream.baseUrl}${t.floodPath}`,
        floodConnections: o.floodConnections,
      });
      log(
        `  ${name} flood: ${o.floodStreams} streams ${fmt(run.flood.quietTokPerS)} -> ${fmt(run.flood.floodTokPerS)} tok/s under ${run.flood.floodRequests} flood requests (x${fmt(run.flood.paceRatio, 2)})`,
      );
    }
  } catch (e) {
    run.error = `${e instanceof Error ? e.message : String(e)}\n--- server log tail ---\n${t.logs().slice(-3000)}`;
    log(`${name} failed: ${run.error.split('\n')[0]}`);
  } finally {
    await t.stop();
    liveTargets.delete(t);
  }
  return run;
}

function markdown(
  o: Options,
  m: EngineMachine,
  bin: LlamaServerBinary | null,
  shape: Record<string, unknown>,
  configs: ConfigRun[],
  jsonPath: string,
): string {
  const L: string[] = [];
  if (o.label) L.push(`**${o.label}**`, '');
  L.push(
    `- CPU flags: ${m.simd.join(', ') || '–'}; kernel ${m.kernel}; load average at start ${m.loadAvgAtStart.join(' / ')} (1 / 5 / 15 min)`,
  );
  L.push(
    `- llama.cpp: ${bin ? `${bin.tag ?? ''} ${bin.commit ? bin.commit.slice(0, 12) : ''} (${bin.source}${bin.cmakeOptions.length ? `: ${bin.cmakeOptions.filter((x) => !/BUILD_(TESTS|EXAMPLES|APP|UI)|USE_PREBUILT_UI|CURL|OPENSSL|BUILD_TOOLS|BUILD_SERVER/.test(x)).join(' ')}` : ''}) for llama-server; Hearth uses node-llama-cpp's prebuilt libllama of the same release` : 'llama-server not run'}`,
  );
  const dims =
    shape['embeddingLength'] !== undefined
      ? `${shape['kind']}: width ${shape['embeddingLength']}, ${shape['blockCount']} layers, ${shape['headCount']} heads / ${shape['headCountKv']} KV heads, FFN ${shape['feedForwardLength']}, ${shape['weightType']}, ${shape['sizeMiB']} MiB`
      : `${shape['path']} (${shape['sizeMiB']} MiB)`;
  L.push(`- Model: ${dims}`);
  L.push(
    `- Load: streaming chat completions, max_tokens ${shape['maxTokens'] ?? o.maxTokens}, temperature 0, seed 1, prompts of ${o.promptLengths.join(' and ')} tokens (long ones unique per request), ${o.durationS} s per concurrency level after a warm-up${o.rounds > 1 ? `, ${o.rounds} rounds with the servers taking turns (best round shown)` : ''}; llama-server with ignore_eos, Hearth counts the tokens it actually generated (tok/req). Client in the same process on the same cores. JSON: ${jsonPath.replace(`${ROOT}/`, '')}`,
  );
  L.push('');
  for (const cfg of configs) {
    L.push(`### slots ${cfg.slots}, threads ${cfg.threads}, context ${cfg.contextSize}/slot, batch ${cfg.batchSize}`);
    L.push('');
    const unavailable = cfg.targets.filter((t) => !t.available || t.error);
    for (const t of unavailable)
      L.push(
        `- **${t.name}**: ${t.available ? `failed: ${(t.error ?? '').split('\n')[0]}` : `unavailable: ${(t.unavailableReason ?? '').split('\n')[0]}`}`,
      );
    const noted = cfg.targets.filter((t) => Array.isArray(t.info['notes']) && (t.info['notes'] as string[]).length);
    for (const t of noted) L.push(`- **${t.name}**: ${(t.info['notes'] as string[]).join('; ')}`);
    for (const t of cfg.targets) {
      const libs = t.info['ggmlCpuBackend'];
      if (Array.isArray(libs) && libs.length) L.push(`- **${t.name}**: ggml CPU backend ${libs.join(', ')}`);
    }
    for (const t of cfg.targets) for (const err of t.sectionErrors) L.push(`- **${t.name}**: ${err.split('\n')[0]}`);
    for (const t of cfg.targets) {
      const retried = t.levels.reduce((n, l) => n + l.connectionRetries, 0);
      if (retried)
        L.push(
          `- **${t.name}**: closed ${retried} of ${t.levels.reduce((n, l) => n + l.requests, 0)} load connections before answering; each was retried at once, the lost time counted in its first-token latency`,
        );
    }
    L.push('');
    const base = cfg.targets.find((t) => t.name === 'llama-server' && t.available);
    const shown = cfg.targets.filter((t) => t.available && t.levels.length);
    L.push(
      '| prompt (tok) | clients | server | tok/s | vs llama-server | tok/req | first token p50 / p95 (ms) | inter-token p50 / p99 (ms) | requests (errors) | server CPU s / 1k tok (its child processes included) |',
    );
    L.push('|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const pl of o.promptLengths)
      for (const c of o.concurrency) {
        const baseLevel = base?.levels.find((l) => l.concurrency === c && l.promptLength === pl);
        for (const t of shown) {
          const l = t.levels.find((x) => x.concurrency === c && x.promptLength === pl);
          if (!l) continue;
          const rel = t === base ? '1.00' : fmt(ratio(l.tokensPerSecond, baseLevel?.tokensPerSecond), 2);
          L.push(
            `| ${fmt(l.promptTokens, 0)} | ${c} | ${t.name} | ${fmt(l.tokensPerSecond)} | ${rel} | ${fmt(l.tokensPerRequest.mean, 1)} | ${fmt(l.firstTokenMs.p50, 0)} / ${fmt(l.firstTokenMs.p95, 0)} | ${fmt(l.interTokenMs.p50, 1)} / ${fmt(l.interTokenMs.p99, 1)} | ${l.requests} (${l.errors}) | ${l.serverCpuS === null ? '–' : fmt((l.serverCpuS / Math.max(1, l.tokens)) * 1000, 2)} |`,
          );
        }
      }
    L.push('');
    const split = splitTable(o, shown);
    if (split.length) L.push(...split, '');
    const withPrefix = cfg.targets.filter((t) => t.prefix);
    if (withPrefix.length) {
      L.push(`Prefix cache (~1,000-token system prompt sent twice, different user turn; median of ${o.prefixTrials}):`);
      L.push('');
      L.push(
        '| server | prompt tokens | first token, request 1 (ms) | request 2 (ms) | 2 / 1 | cached tokens reported (request 2) |',
      );
      L.push('|---|---:|---:|---:|---:|---:|');
      for (const t of withPrefix) {
        const p = t.prefix!;
        L.push(
          `| ${t.name} | ${fmt(p.promptTokens, 0)} | ${fmt(p.firstTokenMs1, 0)} | ${fmt(p.firstTokenMs2, 0)} | ${fmt(p.ratio2to1, 2)} | ${fmt(p.cachedTokens2, 0)} |`,
        );
      }
      L.push('');
    }
    const withMem = cfg.targets.filter((t) => t.memory);
    if (withMem.length) {
      const pts = o.memoryRequests;
      L.push(`Memory (VmRSS of the server process, short requests: max_tokens 8, concurrency ${o.memoryConcurrency}):`);
      L.push('');
      L.push(
        `| server | after load (MiB) | ${pts.map((n) => `after ${n} req (MiB)`).join(' | ')} | growth ${pts.at(-1)} / ${pts[0]} | peak (VmHWM, MiB) |`,
      );
      L.push(`|---|---:|${pts.map(() => '---:').join('|')}|---:|---:|`);
      for (const t of withMem) {
        const mem = t.memory!;
        L.push(
          `| ${t.name} | ${fmt(mem.rssAfterLoadMiB)} | ${pts.map((n) => fmt(mem.points.find((p) => p.requests === n)?.rssMiB)).join(' | ')} | ${fmt(mem.growthRatio, 3)} | ${fmt(mem.points.at(-1)?.hwmMiB)} |`,
        );
      }
      L.push('');
    }
  }
  return `${L.join('\n')}\n`;
}

interface ShapeRun {
  key: string;
  label: string;
  model: Record<string, unknown>;
  maxTokens: number;
  configs: ConfigRun[];
  /** Kernel ceiling rows per prompt length (llama-batched-bench), or why there are none. */
  ceiling: { promptLength: number; threads: number; rows: ceiling.CeilingRow[]; args: string[] }[];
  ceilingError?: string;
  /** The CPU library the ceiling ran on (Hearth's choice for this model). */
  ceilingLibrary?: string;
  /** Smooth decode of Hearth per --step-token-budget (0 = the default batch) and of llama-server. */
  smooth: { server: string; budget: number | null; pace?: number; result: SmoothResult }[];
}

/** Path of a shape's model (written / quantized on first use, cached). */
async function shapeModel(
  key: string,
  o: Options,
  variant: string | null,
): Promise<{ path: string; label: string; maxTokens: number; model: Record<string, unknown> }> {
  const spec = SHAPES[key];
  if (!spec) {
    const path = resolve(key);
    if (!existsSync(path))
      throw new Error(`--shapes: ${key} is neither one of ${Object.keys(SHAPES).join(', ')} nor a file`);
    return { path, label: path, maxTokens: o.maxTokens, model: await modelShape(path, false) };
  }
  const q8 = await ensureRealisticModel(spec.options ?? {});
  let path = q8;
  if (spec.quantizeTo) {
    if (!variant) throw new Error('quantizing needs the native addon (to pick the CPU variant) and llama-quantize');
    path = q8.replace(/\.gguf$/, `-${spec.quantizeTo}.gguf`);
    if (!existsSync(path)) log(`writing ${path} with llama-quantize (takes a minute)`);
    ceiling.quantizeModel(
      await ceiling.ensureCeilingTools(log),
      variant,
      q8,
      path,
      spec.quantizeTo,
      Math.max(1, o.threads[0]!),
    );
  }
  const model = {
    ...(await modelShape(path, false)),
    ...DEFAULT_REALISTIC_LLAMA,
    ...(spec.options ?? {}),
    tokenizerSource: undefined,
    weightType: spec.quantizeTo ?? 'Q8_0',
    kind: 'realistic-llama (random weights, Llama 2 tokenizer)',
    maxTokens: o.model ? o.maxTokens : spec.maxTokens,
  };
  return { path, label: spec.label, maxTokens: o.model ? o.maxTokens : spec.maxTokens, model };
}

/** One (prompt length, clients) cell of a shape's tables: the kernel ceiling at that many sequences, llama-server's level (a) and Hearth's (h). */
function cellAt(
  shape: ShapeRun,
  slots: number,
  ls: TargetRun | undefined,
  hearth: TargetRun | undefined,
  pl: number,
  c: number,
) {
  const level = (t: TargetRun | undefined) => t?.levels.find((l) => l.concurrency === c && l.promptLength === pl);
  return {
    ceil: shape.ceiling.find((x) => x.promptLength === pl)?.rows.find((r) => r.sequences === Math.min(c, slots)),
    a: level(ls),
    h: level(hearth),
  };
}

function summaryMarkdown(o: Options, shape: ShapeRun, variant: string | null): string {
  const L: string[] = [];
  const cfg = shape.configs[0];
  if (!cfg) return '';
  const ls = cfg.targets.find((t) => t.name === 'llama-server' && t.available);
  const hearth =
    cfg.targets.find((t) => t.name.startsWith('hearth-native') && t.available) ??
    cfg.targets.find((t) => t.name.startsWith('hearth') && t.available);
  L.push(`#### Summary: ${shape.label} — slots ${cfg.slots}, threads ${cfg.threads}`);
  L.push('');
  L.push(
    `Ceiling: llama-batched-bench (no HTTP, no sampling) on the same prompt and generation lengths: "with prefill" counts the generated tokens over the whole time, prompts' prefill included, as the servers' tok/s do (the ratio to it is the target); "decode only" is generation tok/s after the prompts. On node-llama-cpp's own prebuilt libllama and ${(shape.ceilingLibrary ?? variant ?? '?').split('/').pop()} — the CPU library Hearth chose for this model (--cpu-kernels)${shape.ceilingError ? `; unavailable: ${shape.ceilingError.split('\n')[0]}` : ''}. Hearth: ${hearth ? `${hearth.name}, ${String(hearth.info['threads'])} threads, thread pool ${String(hearth.info['threadPool'])}, ${String(hearth.info['cpuBackend'] ?? '?')}` : 'unavailable'}.`,
  );
  L.push('');
  L.push(
    `| prompt | clients | ceiling tok/s with prefill / decode only | llama-server tok/s | Hearth tok/s | Hearth / ceiling with prefill (decode only) | Hearth / llama-server${o.rounds > 1 ? ' best rounds (paired, median)' : ''} | TTFT p50 / p95 ms (llama-server) | TTFT p50 / p95 ms (Hearth) | ITL p50 / p99 ms (llama-server) | ITL p50 / p99 ms (Hearth) |`,
  );
  L.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const pl of o.promptLengths)
    for (const c of o.concurrency) {
      const { ceil, a, h } = cellAt(shape, cfg.slots, ls, hearth, pl, c);
      L.push(
        `| ${pl} | ${c} | ${fmt(ceil?.requestTokPerS)} / ${fmt(ceil?.tgTokPerS)} | ${fmt(a?.tokensPerSecond)} | ${fmt(h?.tokensPerSecond)} | **${fmt(ratio(h?.tokensPerSecond, ceil?.requestTokPerS), 2)}** (${fmt(ratio(h?.tokensPerSecond, ceil?.tgTokPerS), 2)}) | **${fmt(ratio(h?.tokensPerSecond, a?.tokensPerSecond), 2)}**${o.rounds > 1 ? ` (${fmt(pairedRatio(hearth, ls, c, pl), 2)})` : ''} | ${fmt(a?.firstTokenMs.p50, 0)} / ${fmt(a?.firstTokenMs.p95, 0)} | ${fmt(h?.firstTokenMs.p50, 0)} / ${fmt(h?.firstTokenMs.p95, 0)} | ${fmt(a?.interTokenMs.p50)} / ${fmt(a?.interTokenMs.p99)} | ${fmt(h?.interTokenMs.p50)} / ${fmt(h?.interTokenMs.p99)} |`,
      );
    }
  L.push('');
  if (shape.smooth.length) {
    L.push(
      `Smooth decode: 7 streams decoding, then one ~${o.smoothPromptTokens}-token prompt arrives (target: longest gap <= 2 x median).`,
    );
    L.push('');
    L.push(
      'Gaps are between content events (what a client sees) and, "per token", between tokens (an event carrying m tokens after g ms counts as m gaps of g / m; a token held back while its text could begin a stop string arrives with the next one).',
    );
    L.push('');
    L.push(
      "| server | step token budget / prefill pace | long prompt tokens | its TTFT (ms) | decoders' median gap (ms) | gap p90 during its prefill (ms) | longest gap during its prefill (ms) | longest / median | per token: longest during (ms) | per token: longest / median | longest gap of plain decoding, 5 s before it (ms) | errors |",
    );
    L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const x of shape.smooth) {
      const r = x.result;
      L.push(
        `| ${x.server} | ${x.budget === null ? '–' : x.budget === 0 ? `0 (batch ${cfg.batchSize})` : x.budget}${x.pace ? ` / ${x.pace}%` : ''} | ${fmt(r.longPromptTokens, 0)} | ${fmt(r.longTtftMs, 0)} | ${fmt(r.medianGapMs)} | ${fmt(r.p90GapDuringMs)} | ${fmt(r.maxGapDuringMs)} | **${fmt(r.gapRatio, 2)}** | ${fmt(r.maxTokenGapDuringMs)} | **${fmt(r.tokenGapRatio, 2)}** | ${fmt(r.maxGapBeforeMs)} | ${r.errors} |`,
      );
    }
    L.push('');
  }
  const flooded = cfg.targets.filter((t) => t.flood);
  if (flooded.length) {
    L.push(
      `Flood: ${o.floodStreams} streams, alone and under \`autocannon -c ${o.floodConnections}\` on the models route without credentials (a separate process, same machine).`,
    );
    L.push('');
    L.push('| server | tok/s alone | tok/s under flood | pace ratio | flood requests (status counts) | errors |');
    L.push('|---|---:|---:|---:|---|---:|');
    for (const t of flooded) {
      const f = t.flood!;
      L.push(
        `| ${t.name} | ${fmt(f.quietTokPerS)} | ${fmt(f.floodTokPerS)} | **${fmt(f.paceRatio, 2)}** | ${f.floodRequests} (${Object.entries(
          f.floodStatus,
        )
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')}) | ${f.errors} |`,
      );
    }
    L.push('');
  }
  const targets = targetsMarkdown(o, shape);
  if (targets.length) L.push(...targets, '');
  return L.join('\n');
}

/**
 * Issues #10's and #39's targets, each judged on this run's figures: at 1 and at 8 streams Hearth >= 0.85 x the
 * ceiling (with prefill); >= 1.3 x llama-server at 8 streams, >= 1.1 x at 1; TTFT p50 no worse than
 * llama-server's at every level; smooth decode (longest gap <= 2 x median) for some step budget; under
 * the flood, at least llama-server's pace ratio. A target without figures says so.
 */
function targetsMarkdown(o: Options, shape: ShapeRun): string[] {
  const cfg = shape.configs[0];
  if (!cfg) return [];
  const ls = cfg.targets.find((t) => t.name === 'llama-server' && t.available);
  const hearth = cfg.targets.find((t) => t.name.startsWith('hearth-native') && t.available);
  const rows: string[] = [];
  const judge = (what: string, value: number | undefined, bound: number, atLeast: boolean, unit = '') => {
    const verdict =
      value === undefined || !Number.isFinite(value)
        ? 'no figures'
        : (atLeast ? value >= bound : value <= bound)
          ? 'met'
          : '**not met**';
    rows.push(
      `| ${what} | ${value === undefined ? '–' : `${fmt(value, 2)}${unit}`} | ${atLeast ? '>=' : '<='} ${fmt(bound, 2)}${unit} | ${verdict} |`,
    );
  };
  for (const pl of o.promptLengths)
    for (const c of o.concurrency) {
      const { ceil, a, h } = cellAt(shape, cfg.slots, ls, hearth, pl, c);
      if (c === 8 || c === 1)
        judge(
          `prompt ${pl}, ${c === 1 ? '1 stream' : '8 streams'}: Hearth / ceiling with prefill`,
          ratio(h?.tokensPerSecond, ceil?.requestTokPerS),
          0.85,
          true,
        );
      // With rounds, the ratio to llama-server is judged paired (round by round, median): see pairedRatio.
      const vsLs = o.rounds > 1 ? pairedRatio(hearth, ls, c, pl) : ratio(h?.tokensPerSecond, a?.tokensPerSecond);
      const how = o.rounds > 1 ? `, paired median of ${o.rounds} rounds` : '';
      if (c === 8) judge(`prompt ${pl}, 8 streams: Hearth / llama-server${how}`, vsLs, 1.3, true);
      if (c === 1) judge(`prompt ${pl}, 1 stream: Hearth / llama-server${how}`, vsLs, 1.1, true);
      if (a && h)
        judge(
          `prompt ${pl}, ${c} clients: TTFT p50 Hearth (llama-server ${fmt(a.firstTokenMs.p50, 0)} ms)`,
          h.firstTokenMs.p50,
          a.firstTokenMs.p50,
          false,
          ' ms',
        );
    }
  const smooth = shape.smooth.filter((x) => x.server.startsWith('hearth') && x.result.errors === 0);
  if (shape.smooth.length) {
    for (const [what, of] of [
      ['between content events', (r: SmoothResult) => r.gapRatio],
      ['per token', (r: SmoothResult) => r.tokenGapRatio],
    ] as const) {
      const best = smooth.reduce<(typeof smooth)[number] | undefined>(
        (b, x) => (b === undefined || of(x.result) < of(b.result) ? x : b),
        undefined,
      );
      judge(
        `smooth decode, ${what}: longest / median gap (Hearth, best: budget ${best?.budget ?? '–'}${best?.pace ? `, pace ${best.pace}%` : ''}, its TTFT ${fmt(best?.result.longTtftMs, 0)} ms; longest gap of plain decoding ${fmt(best?.result.maxGapBeforeMs)} ms)`,
        best ? of(best.result) : undefined,
        2,
        false,
      );
    }
  }
  const lsFlood = ls?.flood;
  const hFlood = hearth?.flood;
  if (lsFlood || hFlood)
    judge("flood: Hearth pace ratio / llama-server's", ratio(hFlood?.paceRatio, lsFlood?.paceRatio), 1, true);
  return captionedTable(
    'Targets (issues #10 and #39), judged on this run:',
    '| target | value | bound | verdict |',
    '|---|---:|---:|---|',
    rows,
  );
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (o.model) o.shapes = [o.model];
  const m = machine();
  const runId = m.info.date.replace(/[:.]/g, '-');
  log(`machine: ${machineLine(m.info)}`);
  let variant: string | null = null;
  try {
    variant = ceiling.probeCpuBackend(ROOT);
    log(`Hearth's native loop loads ${variant}`);
  } catch (e) {
    log(`CPU backend unknown (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); no ceiling, no Q4_K_M`);
  }
  let bin: LlamaServerBinary | null = null;
  let binError: string | null = null;
  if (o.llamaServer) {
    try {
      bin = await ensureLlamaServer({ log: (s) => log(`llama-server: ${s}`) });
      log(`llama-server: ${bin.path} (${bin.source}) ${bin.version.split('\n')[0]}`);
    } catch (e) {
      binError = e instanceof Error ? e.message : String(e);
      log(`llama-server unavailable: ${binError}`);
    }
  }
  const shapes: ShapeRun[] = [];
  for (const [shapeIndex, key] of o.shapes.entries()) {
    let sm: Awaited<ReturnType<typeof shapeModel>>;
    try {
      sm = await shapeModel(key, o, variant);
    } catch (e) {
      log(`shape ${key} skipped: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    const modelPath = sm.path;
    log(`shape ${key}: ${sm.label}: ${modelPath}`);
    const shape: ShapeRun = {
      key,
      label: sm.label,
      model: sm.model,
      maxTokens: sm.maxTokens,
      configs: [],
      ceiling: [],
      smooth: [],
    };
    shapes.push(shape);
    let longN = 0;
    const longPrompt = () =>
      `${longSystemPrompt(`${runId}-${key}-smooth-${longN++}`, Math.round(o.smoothPromptTokens / 1.32))}\nSummarise the notes.`;
    if (o.ceiling && variant) {
      try {
        const tools = await ceiling.ensureCeilingTools(log);
        const slotsMax = Math.max(...o.slots);
        const library = await ceilingLibrary(variant, modelPath, slotsMax, o);
        shape.ceilingLibrary = library;
        const sequences = [...new Set(o.concurrency.map((c) => Math.min(c, slotsMax)))];
        for (const pl of o.promptLengths) {
          // Best of 3 runs per row: ggml's spinning barriers make one disturbed run orders of magnitude slower.
          const runs = [0, 1, 2].map(() =>
            ceiling.runBatchedBench(tools, library, modelPath, {
              threads: o.threads[0]!,
              promptTokens: pl,
              genTokens: sm.maxTokens,
              sequences,
              batchSize: o.batchSize,
            }),
          );
          const r = {
            args: runs[0]!.args,
            rows: runs[0]!.rows.map((row) =>
              runs
                .map((x) => x.rows.find((y) => y.sequences === row.sequences) ?? row)
                .reduce((a, b) => (b.tgTokPerS > a.tgTokPerS ? b : a)),
            ),
          };
          shape.ceiling.push({ promptLength: pl, threads: o.threads[0]!, rows: r.rows, args: r.args });
          log(
            `  ceiling prompt ${pl}: ${r.rows.map((x) => `${x.sequences} seq ${fmt(x.requestTokPerS)} tok/s with prefill, ${fmt(x.tgTokPerS)} decode only`).join(', ')}`,
          );
        }
      } catch (e) {
        shape.ceilingError = e instanceof Error ? e.message : String(e);
        log(`  ceiling unavailable: ${shape.ceilingError.split('\n')[0]}`);
      }
    }
    const flood = o.flood && (o.floodAllShapes || shapeIndex === 0);
    for (const slots of o.slots) {
      for (const threads of o.threads) {
        const cfg: ConfigRun = { slots, threads, contextSize: o.contextSize, batchSize: o.batchSize, targets: [] };
        const first = slots === o.slots[0] && threads === o.threads[0];
        const plan: ShapePlan = {
          maxTokens: sm.maxTokens,
          smooth: o.smooth && first,
          flood: flood && first,
          longPrompt,
        };
        const starters: { name: string; start: () => Promise<Target>; engine?: HearthEngine }[] = [];
        if (o.llamaServer && bin)
          starters.push({
            name: 'llama-server',
            start: () => startLlamaServerTarget(bin!, modelPath, slots, threads, o),
          });
        for (const engine of o.engines)
          starters.push({
            name: `hearth-${engine}`,
            start: () => startHearthTarget(engine, modelPath, slots, threads, o),
            engine,
          });
        const byName = new Map<string, TargetRun>();
        for (let round = 1; round <= o.rounds; round++) {
          if (o.rounds > 1) log(`round ${round} of ${o.rounds}`);
          for (const st of starters) {
            const prev = byName.get(st.name);
            if (prev && !prev.available) continue;
            const run = await runTarget(st.name, st.start, cfg, o, runId, st.engine, round === 1, plan);
            if (run.smooth)
              shape.smooth.push({ server: st.name, budget: st.name === 'llama-server' ? null : 0, result: run.smooth });
            if (!prev) {
              run.rounds = [run.levels];
              byName.set(st.name, run);
              continue;
            }
            prev.rounds!.push(run.levels);
            prev.sectionErrors.push(
              ...run.sectionErrors,
              ...(run.error ? [`round ${round}: ${run.error.split('\n')[0]}`] : []),
            );
            prev.levels = prev.levels.map((best) => {
              const other = run.levels.find(
                (l) => l.concurrency === best.concurrency && l.promptLength === best.promptLength,
              );
              return other && other.errors <= best.errors && other.tokensPerSecond > best.tokensPerSecond
                ? other
                : best;
            });
          }
        }
        // The other step budgets: a Hearth start each, smooth scenario only.
        if (plan.smooth && o.engines.includes('native')) {
          // Hearth again per step token budget (> 0), then per prefill pace (budget 0): the smooth scenario only.
          const variants = [
            ...o.budgets.filter((b) => b > 0).map((budget) => ({ budget, pace: undefined as number | undefined })),
            ...o.paces.map((pace) => ({ budget: 0, pace })),
          ];
          for (const { budget, pace } of variants) {
            const what = pace === undefined ? `budget ${budget}` : `pace ${pace}%`;
            const args =
              pace === undefined ? ['--step-token-budget', String(budget)] : ['--prefill-step-percent', String(pace)];
            const run = await runTarget(
              `hearth-native (${what})`,
              () => startHearthTarget('native', modelPath, slots, threads, o, args),
              cfg,
              o,
              runId,
              'native',
              true,
              { ...plan, smoothOnly: true, flood: false },
            );
            if (run.smooth)
              shape.smooth.push({
                server: 'hearth-native',
                budget,
                ...(pace === undefined ? {} : { pace }),
                result: run.smooth,
              });
            else if (run.unavailableReason || run.error)
              log(`  ${what}: ${(run.unavailableReason ?? run.error ?? '').split('\n')[0]}`);
          }
        }
        if (o.llamaServer && !bin)
          cfg.targets.push({ ...emptyRun('llama-server'), unavailableReason: binError ?? 'not built' });
        cfg.targets.push(...byName.values());
        shape.configs.push(cfg);
      }
    }
  }
  const jsonPath = join(OUT_DIR, `engine-${runId}.json`); // the name recordResults gives it
  const data = {
    options: o,
    machine: { simd: m.simd, kernel: m.kernel, loadAvgAtStart: m.loadAvgAtStart, cpuBackend: variant },
    llamaServer: bin,
    llamaServerError: binError,
    shapes,
  };
  const md = [
    `- CPU: ${m.info.cpu ?? ''}; node-llama-cpp's prebuilt ggml CPU library for it: **${variant ?? 'unknown'}**; the library Hearth loads for each model (--cpu-kernels) is named in its summary${o.quick ? '; --quick run' : ''}`,
    ...shapes.map(
      (sh) =>
        `\n### ${sh.label}\n\n${summaryMarkdown(o, sh, variant)}\n\n${markdown(o, m, bin, sh.model, sh.configs, jsonPath)}`,
    ),
  ].join('\n');
  if (o.resultsMd) {
    recordResults('engine', 'Engine: Hearth vs llama-server vs the kernel ceiling', data, md, m.info);
  } else {
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(jsonPath, `${JSON.stringify({ name: 'engine', machine: m.info, data }, null, 2)}\n`);
    process.stdout.write(`${machineLine(m.info)}\n\n${md}`);
    log(`wrote ${jsonPath}`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});

/**
 * Where a token's CPU goes, by thread role (bench/lib/thread-cpu.ts): per server and load level, each role's run time
 * and, in brackets, its run-queue wait (ready, every core taken), in microseconds per generated token. The roles
 * that run less than 2 us a token are left out.
 */
function splitTable(o: Options, shown: TargetRun[]): string[] {
  const rows: string[] = [];
  for (const pl of o.promptLengths)
    for (const c of o.concurrency)
      for (const t of shown) {
        const l = t.levels.find((x) => x.concurrency === c && x.promptLength === pl);
        if (!l?.cpuPerToken) continue;
        const total = l.cpuPerToken.reduce((sum, r) => sum + r.usPerUnit, 0);
        const roles = l.cpuPerToken
          .filter((r) => r.usPerUnit >= 2)
          .map((r) => `${r.role} ${fmt(r.usPerUnit, 0)} (${fmt(r.waitUsPerUnit, 0)})`)
          .join(', ');
        rows.push(
          `| ${fmt(l.promptTokens, 0)} | ${c} | ${t.name} | ${fmt(1e6 / l.tokensPerSecond, 0)} | ${fmt(total, 0)} | ${roles} |`,
        );
      }
  return captionedTable(
    'CPU per generated token by thread (/proc schedstat): run time, and in brackets the time ready but waiting for a core, in us; wall = 1 / tok/s.',
    '| prompt (tok) | clients | server | wall us/token | CPU us/token | by thread: run (wait) |',
    '|---:|---:|---|---:|---:|---|',
    rows,
  );
}

/** A markdown table (`header`, `align`, `rows`) under its caption line and a blank one; nothing when there are no rows. */
function captionedTable(caption: string, header: string, align: string, rows: string[]): string[] {
  return rows.length === 0 ? [] : [caption, '', header, align, ...rows];
}
