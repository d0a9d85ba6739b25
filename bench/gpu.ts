/**
 * `npm run bench:gpu`: Hearth's native loop on CUDA against llama.cpp's own llama-server (the same llama.cpp
 * commit and the same CUDA build, `-ngl 99 -np <slots>`) and the kernel ceiling (llama-batched-bench `-ngl 99`,
 * decode only: no HTTP, no sampling), at 1 / 8 / 32 / 64 streaming clients. Not part of the test suite (CI has
 * no GPU); sized to finish within 8 minutes on an H100 from what `npm run build:cuda -- --bench-tools` built.
 * Hearth finds the CUDA backend as `--gpu-layers auto` does (native/build/cuda/libggml-cuda.so first).
 *
 *   npm run bench:gpu -- [--model 0.5b-q8|<gguf>] [--concurrency 1,8,32,64] [--duration 12] [--max-tokens 128]
 *     [--slots 64] [--tools native/build/cuda/bin] [--targets ceiling,hearth,llama-server,hearth-1t,hearth-first-node,hearth-kv-unified,hearth-prompt-ride] [--temperature 0] [--sampled 64]
 *     [--out-dir bench/out] [--no-results-md]
 *
 * Per server and level: N clients loop streaming chat completions (a short distinct user message: ~16 prompt
 * tokens with the template, max_tokens --max-tokens, temperature --temperature) for --duration seconds after a
 * warm-up; tok/s = completion tokens received in the level / its wall time; TTFT p50 / p95 over the requests
 * that started in it. Hearth runs with HEARTH_NATIVE_PROFILE=1: the loop thread's time per step (batch building,
 * llama_decode, sampling incl. the wait for the GPU, events to JavaScript) is read from its log for each level,
 * which is the profile the next optimisation starts from. Output: a table on stdout, <out-dir>/gpu-<ts>.json and
 * .md, and (unless --no-results-md) a section in bench/RESULTS.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { startHearthProcess, type HearthProcess } from '../test/helpers/hearth-process.ts';
import { parseBatchedBench, type CeilingRow } from './lib/kernel-ceiling.ts';
import { describeMachine, machineLine } from './lib/machine.ts';
import { SHAPES } from './lib/model-shapes.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { percentile } from './lib/stats.ts';
import { makeAgent, streamTimed, type StreamTarget } from './lib/timed-sse.ts';
import { startLlamaServer, type LlamaServerProcess } from './llama-server.ts';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * The environment of llama-server and llama-batched-bench: the libraries of their own build (libllama,
 * libggml-base, and libggml-cuda.so, which ggml loads from the executable's folder) first. Hearth does not get it:
 * its addon binds node-llama-cpp's prebuilt libraries and loads only libggml-cuda.so of this build.
 */
const toolsEnv = (tools: string): NodeJS.ProcessEnv => ({
  ...process.env,
  LD_LIBRARY_PATH: [tools, process.env['LD_LIBRARY_PATH']].filter(Boolean).join(':'),
});

interface Options {
  model: string;
  concurrency: number[];
  durationS: number;
  maxTokens: number;
  slots: number;
  tools: string;
  targets: Set<Target>;
  temperature: number;
  /** Client count of one extra level with sampled requests (temperature 0.8, top_p 0.95); 0 = none. */
  sampledClients: number;
  outDir: string;
  resultsMd: boolean;
}

/**
 * Hearth with one change, the A/B of a choice in the same run: hearth-1t samples its rows on the loop thread alone (of
 * parallel sampling); hearth-first-node keys ggml-cuda's CUDA graphs by the first node only, as ggml does (of
 * native/cuda-patches/cuda_graph_key.h; the other targets use the shape key of Hearth's build); hearth-kv-unified
 * keeps all slots in one KV buffer, so a step where a prompt chunk joins is one pass instead of two (of
 * --kv-unified, off by default); hearth-prompt-ride feeds prompts of up to 64 tokens one token a step in the
 * generating rows' pass, the other way to one pass a step (of --prompt-ride-tokens, off by default).
 */
const HEARTH_VARIANTS = {
  'hearth-1t': { env: { HEARTH_SAMPLER_THREADS: '1' }, label: 'rows sampled on 1 thread' },
  'hearth-first-node': { env: { HEARTH_CUDA_GRAPH_KEY: 'first-node' }, label: "ggml's CUDA-graph key" },
  'hearth-kv-unified': { env: { HEARTH_KV_UNIFIED: 'true' }, label: 'one KV buffer (--kv-unified)' },
  'hearth-prompt-ride': { env: { HEARTH_PROMPT_RIDE_TOKENS: '64' }, label: 'prompts riding (--prompt-ride-tokens 64)' },
} as const;
type Variant = keyof typeof HEARTH_VARIANTS;
const VARIANTS = Object.keys(HEARTH_VARIANTS) as Variant[];
type Target = 'ceiling' | 'hearth' | Variant | 'llama-server';
type Server = Exclude<Target, 'ceiling'>;

interface Profile {
  steps: number;
  rowsPerStep: number;
  msPerStep: number;
  buildMs: number;
  decodeMs: number;
  syncMs: number;
  sampleMs: number;
  emitMs: number;
  busyShare: number;
  /** Share of steps whose compute graph llama.cpp reused from the step before (no rebuild; on CUDA, its graph replays). */
  graphsReused: number;
}

interface Level {
  clients: number;
  /** Sampled requests (temperature 0.8, top_p 0.95) instead of --temperature. */
  sampled?: boolean;
  tokPerS: number;
  requests: number;
  errors: number;
  firstError?: string;
  ttftP50: number;
  ttftP95: number;
  tokensPerRequest: number;
  /** Hearth only: the native loop's time per step over this level (HEARTH_NATIVE_PROFILE). */
  profile?: Profile;
}

interface ServerRun {
  server: Server;
  where: string;
  levels: Level[];
  notes: string[];
}

const USAGE = `usage: npm run bench:gpu -- [--model 0.5b-q8|<gguf>] [--concurrency 1,8,32,64] [--duration 12] [--max-tokens 128]
  [--slots 64] [--tools native/build/cuda/bin] [--targets ceiling,hearth,llama-server,hearth-1t,hearth-first-node,hearth-kv-unified,hearth-prompt-ride] [--temperature 0] [--sampled 64] [--out-dir bench/out] [--no-results-md]`;

function parseArgs(argv: string[]): Options {
  const o: Options = {
    model: '0.5b-q8',
    concurrency: [1, 8, 32, 64],
    durationS: 12,
    maxTokens: 128,
    slots: 64,
    tools: join(ROOT, 'native/build/cuda/bin'),
    targets: new Set(['ceiling', 'hearth', 'llama-server']),
    temperature: 0,
    sampledClients: 64,
    outDir: join(ROOT, 'bench/out'),
    resultsMd: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${a} needs a value\n${USAGE}`);
      return x;
    };
    if (a === '--model') o.model = v();
    else if (a === '--concurrency') o.concurrency = v().split(',').map(Number);
    else if (a === '--duration') o.durationS = Number(v());
    else if (a === '--max-tokens') o.maxTokens = Number(v());
    else if (a === '--slots') o.slots = Number(v());
    else if (a === '--tools') o.tools = resolve(v());
    else if (a === '--targets') o.targets = new Set(v().split(',') as Target[]);
    else if (a === '--temperature') o.temperature = Number(v());
    else if (a === '--sampled') o.sampledClients = Number(v());
    else if (a === '--out-dir') o.outDir = resolve(v());
    else if (a === '--no-results-md') o.resultsMd = false;
    else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  if (o.concurrency.some((c) => !Number.isInteger(c) || c < 1) || !(o.durationS > 0) || !(o.maxTokens > 0))
    throw new Error(USAGE);
  return o;
}

function log(line: string): void {
  process.stderr.write(`[bench:gpu ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** nvidia-smi's name, memory and driver of the first GPU, or why there is none. */
function describeGpu(): string {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=name,memory.total,driver_version,compute_cap', '--format=csv,noheader'],
    { encoding: 'utf8' },
  );
  return r.status === 0
    ? r.stdout.trim().split('\n')[0]!
    : `no GPU (nvidia-smi: ${r.error?.message ?? r.stderr.trim()})`;
}

function ceiling(o: Options, model: string): CeilingRow[] {
  const bin = join(o.tools, 'llama-batched-bench');
  const maxSeq = Math.max(...o.concurrency);
  const args = [
    '-m',
    model,
    '-ngl',
    '99',
    '-c',
    String(maxSeq * (32 + o.maxTokens + 16)),
    '-b',
    '2048',
    '-ub',
    '512',
    '-npp',
    '16',
    '-ntg',
    String(o.maxTokens),
    '-npl',
    o.concurrency.join(','),
  ];
  log(`ceiling: ${bin} ${args.join(' ')}`);
  const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 180_000, maxBuffer: 16 << 20, env: toolsEnv(o.tools) });
  const raw = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  if (r.status !== 0) throw new Error(`llama-batched-bench failed (${r.status ?? r.signal}): ${raw.slice(-2000)}`);
  return parseBatchedBench(raw);
}

/** One level: `clients` loops of streaming requests for `durationS`, counting what finished or arrived inside it. */
async function level(
  target: StreamTarget,
  model: string,
  o: Options,
  clients: number,
  tag: string,
  sampled = false,
): Promise<Omit<Level, 'profile'>> {
  const agent = makeAgent(clients);
  const started = performance.now();
  const endAt = started + o.durationS * 1000;
  let tokens = 0;
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  const ttft: number[] = [];
  let n = 0;
  const loop = async (c: number) => {
    while (performance.now() < endAt) {
      const body = {
        model,
        messages: [{ role: 'user', content: `Request ${tag}-${c}-${n++}: tell me a story.` }],
        max_tokens: o.maxTokens,
        ...(sampled ? { temperature: 0.8, top_p: 0.95 } : { temperature: o.temperature }),
        stream: true,
        stream_options: { include_usage: true },
      };
      const r = await streamTimed(target, body, agent, 120_000);
      requests++;
      if (!r.ok) {
        errors++;
        firstError ??= `${r.status} ${r.error ?? ''}`.slice(0, 300);
        continue;
      }
      tokens += r.completionTokens ?? r.contentEvents;
      if (Number.isFinite(r.firstTokenMs)) ttft.push(r.firstTokenMs);
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => loop(c)));
  const wallS = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    clients,
    ...(sampled ? { sampled } : {}),
    tokPerS: tokens / wallS,
    requests,
    errors,
    ...(firstError ? { firstError } : {}),
    ttftP50: percentile(ttft, 50),
    ttftP95: percentile(ttft, 95),
    tokensPerRequest: requests - errors > 0 ? tokens / (requests - errors) : 0,
  };
}

/** The native loop's profile lines logged after `fromChars` of the log, merged (step-weighted). */
function profileSince(logs: string, fromChars: number): Profile | undefined {
  let steps = 0;
  let rows = 0;
  let busy = 0;
  let window = 0;
  const ms = { build: 0, decode: 0, sync: 0, sample: 0, emit: 0 };
  let reused = 0;
  for (const m of logs
    .slice(fromChars)
    .matchAll(
      /hearth-native-profile steps=(\d+) rows_per_step=([\d.]+) window_ms=([\d.]+) busy_ms=([\d.]+) build_ms=([\d.]+) decode_ms=([\d.]+) sync_ms=([\d.]+) sample_ms=([\d.]+) emit_ms=([\d.]+) ms_per_step=[\d.]+ graphs_reused=([\d.]+)/g,
    )) {
    const s = Number(m[1]);
    steps += s;
    rows += s * Number(m[2]);
    window += Number(m[3]);
    busy += Number(m[4]);
    ms.build += Number(m[5]);
    ms.decode += Number(m[6]);
    ms.sync += Number(m[7]);
    ms.sample += Number(m[8]);
    ms.emit += Number(m[9]);
    reused += s * Number(m[10]);
  }
  if (steps === 0) return undefined;
  return {
    steps,
    rowsPerStep: rows / steps,
    msPerStep: busy / steps,
    buildMs: ms.build / steps,
    decodeMs: ms.decode / steps,
    syncMs: ms.sync / steps,
    sampleMs: ms.sample / steps,
    emitMs: ms.emit / steps,
    busyShare: window > 0 ? busy / window : 0,
    graphsReused: reused / steps,
  };
}

async function runServer(server: Server, o: Options, model: string): Promise<ServerRun> {
  const notes: string[] = [];
  const contextPerSlot = 64 + o.maxTokens + 64;
  let hearth: HearthProcess | undefined;
  let llama: LlamaServerProcess | undefined;
  let target: StreamTarget;
  let where: string;
  let modelName = 'bench';
  if (server !== 'llama-server') {
    hearth = await startHearthProcess({
      args: [
        '--model',
        model,
        '--engine',
        'native',
        '--gpu-layers',
        'auto',
        '--slots',
        String(o.slots),
        '--context-size',
        String(contextPerSlot),
        '--cpu-kernels',
        'prebuilt',
        '--front',
        'off',
        '--queue-limit',
        '256',
        '--prompt-cache-mib',
        '0',
      ],
      env: {
        HEARTH_NATIVE_PROFILE: '1',
        HEARTH_LOG_LEVEL: 'info',
        ...(server === 'hearth' ? {} : HEARTH_VARIANTS[server].env),
      },
    });
    await hearth.waitReady(300_000);
    const ready = /"msg":"model ready".*/.exec(hearth.logs())?.[0] ?? '';
    const gpu = /"gpu":(\{"backend":"cuda"[^}]*\}[^}]*\})/.exec(ready)?.[1];
    where = gpu
      ? `native loop, ${gpu}`
      : `native loop, NOT on a GPU: ${/"msg":"gpu unusable[^\n]*/.exec(hearth.logs())?.[0] ?? ready}`;
    if (!gpu) notes.push('Hearth did not offload to the GPU');
    modelName = (
      (await (
        await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${hearth.key}` } })
      ).json()) as { data: { id: string }[] }
    ).data[0]!.id;
    target = {
      baseUrl: hearth.baseUrl,
      path: '/api/inference/v1/chat/completions',
      headers: { authorization: `Bearer ${hearth.key}` },
    };
  } else {
    llama = await startLlamaServer({
      binary: join(o.tools, 'llama-server'),
      model,
      slots: o.slots,
      threads: 8,
      contextPerSlot,
      extraArgs: ['-ngl', '99'],
      timeoutMs: 300_000,
      retryWithoutRepackOnSigill: false,
      env: toolsEnv(o.tools),
    });
    where = `llama-server ${llama.args.join(' ')}`;
    target = { baseUrl: llama.baseUrl, path: '/v1/chat/completions' };
  }
  const levels: Level[] = [];
  try {
    await level(target, modelName, { ...o, durationS: 3 }, Math.min(o.slots, 16), 'warm');
    const plan = [
      ...o.concurrency.map((c) => ({ clients: c, sampled: false })),
      ...(o.sampledClients > 0 ? [{ clients: o.sampledClients, sampled: true }] : []),
    ];
    for (const { clients, sampled } of plan) {
      const from = hearth ? hearth.logs().length : 0;
      const l: Level = await level(target, modelName, o, clients, `c${clients}${sampled ? 's' : ''}`, sampled);
      const profile = hearth ? profileSince(hearth.logs(), from) : undefined;
      if (profile) l.profile = profile;
      log(
        `${server} x${clients}${sampled ? ' sampled' : ''}: ${fmt.num(l.tokPerS)} tok/s, TTFT p50 ${fmt.ms(l.ttftP50)}, ${l.requests} requests, ${l.errors} errors${profile ? `, ${fmt.num(profile.rowsPerStep)} rows/step, ${profile.msPerStep.toFixed(2)} ms/step (decode ${profile.decodeMs.toFixed(2)}, GPU wait ${profile.syncMs.toFixed(2)}, sample ${profile.sampleMs.toFixed(2)}, emit ${profile.emitMs.toFixed(2)}, build ${profile.buildMs.toFixed(2)}), busy ${fmt.pct(profile.busyShare)}, graph reused ${fmt.pct(profile.graphsReused)}` : ''}`,
      );
      levels.push(l);
    }
  } finally {
    await hearth?.stop();
    await llama?.stop();
    // The server's own log (its tail), for what the table cannot say: load lines, warnings, the profile.
    mkdirSync(o.outDir, { recursive: true });
    writeFileSync(join(o.outDir, `${server}.log`), (hearth?.logs() ?? llama?.logs() ?? '').slice(-512 * 1024));
  }
  return { server, where, levels, notes };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const gpu = describeGpu();
  const machine = describeMachine();
  log(`GPU: ${gpu}; ${machineLine(machine)}`);
  for (const f of [
    ...(o.targets.has('llama-server') ? ['llama-server'] : []),
    ...(o.targets.has('ceiling') ? ['llama-batched-bench'] : []),
  ]) {
    if (!existsSync(join(o.tools, f)))
      throw new Error(`${join(o.tools, f)} is missing: run npm run build:cuda -- --bench-tools first`);
  }
  if (o.targets.has('hearth') && !existsSync(join(ROOT, 'native/build/cuda/libggml-cuda.so')))
    log(
      'native/build/cuda/libggml-cuda.so is missing (npm run build:cuda): Hearth will use whatever CUDA backend --gpu-layers auto finds',
    );
  const shape = SHAPES[o.model];
  const model = shape ? await ensureRealisticModel(shape.options) : resolve(o.model);
  const label = shape ? `${o.model}: ${shape.label}` : model;
  log(`model ${label} (${model})`);

  const ceilingRows = o.targets.has('ceiling') ? ceiling(o, model) : [];
  for (const r of ceilingRows)
    log(`ceiling x${r.sequences}: decode ${fmt.num(r.tgTokPerS)} tok/s, with prefill ${fmt.num(r.requestTokPerS)}`);
  const runs: ServerRun[] = [];
  for (const server of ['hearth', 'llama-server', ...VARIANTS] as const) {
    if (!o.targets.has(server)) continue;
    try {
      runs.push(await runServer(server, o, model));
    } catch (err) {
      runs.push({
        server,
        where: 'failed to run',
        levels: [],
        notes: [err instanceof Error ? err.message.slice(0, 2000) : String(err)],
      });
      mkdirSync(o.outDir, { recursive: true });
      writeFileSync(
        join(o.outDir, `${server}-error.log`),
        err instanceof Error ? `${err.stack ?? ''}\n${err.message}` : String(err),
      );
      log(`${server} failed: ${err instanceof Error ? err.message.slice(0, 2000) : String(err)}`);
    }
  }

  const hearthRun = runs.find((r) => r.server === 'hearth');
  const variantRuns = runs.filter((r): r is ServerRun & { server: Variant } => r.server in HEARTH_VARIANTS);
  const llamaRun = runs.find((r) => r.server === 'llama-server');
  const rowKeys = [
    ...o.concurrency.map((c) => ({ c, sampled: false })),
    ...(o.sampledClients > 0 ? [{ c: o.sampledClients, sampled: true }] : []),
  ];
  const rows = rowKeys.map(({ c, sampled }) => {
    const h = hearthRun?.levels.find((l) => l.clients === c && !!l.sampled === sampled);
    const l = llamaRun?.levels.find((x) => x.clients === c && !!x.sampled === sampled);
    const ceil = ceilingRows.find((r) => r.sequences === c);
    const ratio = (a: number | undefined, b: number | undefined) =>
      a !== undefined && b !== undefined && b > 0 ? (a / b).toFixed(2) : '–';
    return [
      sampled ? `${c} (sampled)` : c,
      ceil ? fmt.num(ceil.tgTokPerS) : '–',
      l ? fmt.num(l.tokPerS) : '–',
      h ? fmt.num(h.tokPerS) : '–',
      `**${ratio(h?.tokPerS, l?.tokPerS)}**`,
      ratio(h?.tokPerS, ceil?.tgTokPerS),
      ratio(l?.tokPerS, ceil?.tgTokPerS),
      l ? `${fmt.ms(l.ttftP50)} / ${fmt.ms(l.ttftP95)}` : '–',
      h ? `${fmt.ms(h.ttftP50)} / ${fmt.ms(h.ttftP95)}` : '–',
      `${l?.errors ?? '–'} / ${h?.errors ?? '–'}`,
      ...variantRuns.flatMap((v) => {
        const hv = v.levels.find((x) => x.clients === c && !!x.sampled === sampled);
        return [hv ? fmt.num(hv.tokPerS) : '–', ratio(h?.tokPerS, hv?.tokPerS)];
      }),
    ];
  });
  const profileRows = [hearthRun, ...variantRuns].flatMap((run) =>
    (run?.levels ?? [])
      .filter((l) => l.profile)
      .map((l) => {
        const p = l.profile!;
        return [
          run!.server === 'hearth' ? 'as built' : HEARTH_VARIANTS[run!.server as Variant].label,
          l.sampled ? `${l.clients} (sampled)` : l.clients,
          fmt.num(p.rowsPerStep),
          p.msPerStep.toFixed(2),
          p.buildMs.toFixed(3),
          p.decodeMs.toFixed(3),
          p.syncMs.toFixed(3),
          p.sampleMs.toFixed(3),
          p.emitMs.toFixed(3),
          fmt.pct(p.busyShare),
          fmt.pct(p.graphsReused),
        ];
      }),
  );
  const md = [
    `GPU: ${gpu} · ${machineLine(machine)}`,
    '',
    `Model ${label}; streaming clients, max_tokens ${o.maxTokens}, temperature ${o.temperature}, ~16-token prompts; ${o.durationS} s per level after a warm-up${o.sampledClients > 0 ? `; the sampled row: temperature 0.8, top_p 0.95` : ''}. ` +
      `Ceiling: llama-batched-bench -ngl 99, 16-token prompts, ${o.maxTokens} generated, decode tok/s. llama-server: \`-ngl 99 -np ${o.slots}\`, same CUDA build. Hearth: ${hearthRun?.where ?? '–'}, --slots ${o.slots}.`,
    '',
    table(
      [
        'clients',
        'ceiling tok/s (decode)',
        'llama-server tok/s',
        'Hearth tok/s',
        'Hearth / llama-server',
        'Hearth / ceiling',
        'llama-server / ceiling',
        'TTFT p50 / p95 llama-server',
        'TTFT p50 / p95 Hearth',
        'errors (llama-server / Hearth)',
        ...variantRuns.flatMap((v) => [
          `Hearth, ${HEARTH_VARIANTS[v.server].label}, tok/s`,
          `Hearth / Hearth with ${HEARTH_VARIANTS[v.server].label}`,
        ]),
      ],
      rows,
    ),
    '',
    ...(profileRows.length
      ? [
          "Hearth's loop thread per step (HEARTH_NATIVE_PROFILE, ms): building the batch, llama_decode (building and launching the graph), waiting for the GPU (llama_synchronize), sampling the rows, events to JavaScript; busy = share of the time the loop was stepping; graph reused = share of steps whose compute graph llama.cpp kept from the step before (ggml-cuda replays a rebuilt graph's CUDA graph when that shape's is warm, native/cuda-patches/cuda_graph_key.h).",
          '',
          table(
            [
              'Hearth',
              'clients',
              'rows / step',
              'ms / step',
              'build',
              'decode',
              'GPU wait',
              'sample',
              'emit',
              'busy',
              'graph reused',
            ],
            profileRows,
          ),
          '',
        ]
      : []),
    ...runs.flatMap((r) => r.notes.map((n) => `- ${r.server}: ${n}`)),
    `Bench wall time: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  ].join('\n');
  process.stdout.write(`${md}\n`);
  const data = { gpu, machine, options: { ...o, targets: [...o.targets] }, model: label, ceiling: ceilingRows, runs };
  mkdirSync(o.outDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(o.outDir, `gpu-${stamp}.json`), `${JSON.stringify(data, null, 1)}\n`);
  writeFileSync(join(o.outDir, `gpu-${stamp}.md`), `${md}\n`);
  if (o.resultsMd)
    recordResults('gpu', 'GPU: Hearth native on CUDA vs llama-server vs the kernel ceiling', data, md, machine);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
