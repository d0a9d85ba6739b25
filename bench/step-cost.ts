import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { findPrebuiltLlama, NATIVE_BUILD_DIR } from '../native/paths.ts';
import { SHAPES } from './lib/model-shapes.ts';
import { BENCH_DIR, OUT_DIR, recordResults, table } from './lib/report.ts';

/**
 * bench:step-cost: what one llama_decode step of Hearth's slot loop costs, by batch shape, on node-llama-cpp's
 * prebuilt llama.cpp (the library Hearth loads), without HTTP or JavaScript. It is the physics behind the
 * smooth-decode trade (`--prefill-step-percent`, `--step-token-budget`): how much a prompt chunk adds to a step
 * of D generating slots, by chunk size and by how long the prompt already is.
 *
 *   npm run bench:step-cost -- [--shape 0.5b-q8 | --model FILE] [--threads 2] [--decoders 7]
 *       [--decoder-context 300] [--prompt-contexts 0,300,700,1300] [--chunks 1,2,4,8] [--reps 9]
 *
 * Compiles bench/probes/step-cost.cpp with g++ against the headers `npm run build:native` extracted
 * (native/build/llama-headers/) and the prebuilt libraries. Each figure is the median of --reps steps; the four
 * shapes of a row take turns, and every step is undone, so all repetitions see the same contexts. Shapes:
 * "decode only": the D generating rows; "mixed": the chunk's rows after theirs, in sequence order, as the loop
 * builds its batch; "prompt first": the chunk's rows first, so llama.cpp's equal split gives it a pass of its
 * own; "chunk alone": the chunk with no decoders. STEP_COST_FLASH_ATTN=on|off sets llama.cpp's flash attention
 * (default: its auto, as Hearth's loop).
 */
const { values } = parseArgs({
  options: {
    shape: { type: 'string', default: '0.5b-q8' },
    model: { type: 'string' },
    threads: { type: 'string', default: '2' },
    decoders: { type: 'string', default: '7' },
    'decoder-context': { type: 'string', default: '300' },
    'prompt-contexts': { type: 'string', default: '0,300,700,1300' },
    chunks: { type: 'string', default: '1,2,4,8' },
    reps: { type: 'string', default: '9' },
  },
});

function positiveList(name: string, text: string, min: number): number[] {
  const list = text.split(',').map((s) => Number(s.trim()));
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < min))
    throw new Error(`--${name}: integers >= ${min}, comma-separated`);
  return list;
}

const threads = positiveList('threads', values.threads!, 1)[0]!;
const decoders = positiveList('decoders', values.decoders!, 1)[0]!;
const decoderContext = positiveList('decoder-context', values['decoder-context']!, 1)[0]!;
const promptContexts = positiveList('prompt-contexts', values['prompt-contexts']!, 0);
const chunks = positiveList('chunks', values.chunks!, 1);
const reps = positiveList('reps', values.reps!, 1)[0]!;

const prebuilt = findPrebuiltLlama();
if ('reason' in prebuilt) throw new Error(`no prebuilt llama.cpp: ${prebuilt.reason}`);
const headerRoot = path.join(NATIVE_BUILD_DIR, 'llama-headers');
const headerDir = existsSync(headerRoot)
  ? readdirSync(headerRoot)
      .map((d) => path.join(headerRoot, d))
      .find((d) => existsSync(path.join(d, 'include', 'llama.h')))
  : undefined;
if (!headerDir) throw new Error('no llama.cpp headers in native/build/llama-headers: run `npm run build:native` first');

let modelPath: string;
let modelLabel: string;
if (values.model) {
  modelPath = path.resolve(values.model);
  modelLabel = path.basename(modelPath);
} else {
  const spec = SHAPES[values.shape!];
  if (!spec || spec.quantizeTo)
    throw new Error(
      `--shape: one of ${Object.keys(SHAPES)
        .filter((k) => !SHAPES[k]!.quantizeTo)
        .join(', ')} (or --model FILE)`,
    );
  modelPath = await ensureRealisticModel(spec.options ?? {});
  modelLabel = spec.label;
}

mkdirSync(OUT_DIR, { recursive: true });
const binary = path.join(OUT_DIR, 'step-cost');
const source = path.join(BENCH_DIR, 'probes', 'step-cost.cpp');
const compile = spawnSync(
  'g++',
  [
    '-O2',
    '-std=c++17',
    `-I${path.join(headerDir, 'include')}`,
    `-I${path.join(headerDir, 'ggml', 'include')}`,
    `-I${path.join(BENCH_DIR, '..', 'native', 'src')}`,
    source,
    '-o',
    binary,
    `-L${prebuilt.binDir}`,
    `-l:${prebuilt.libllama}`,
    `-l:${prebuilt.libggml}`,
    `-l:${prebuilt.libggmlBase}`,
    `-Wl,-rpath,${prebuilt.binDir}`,
  ],
  { encoding: 'utf8' },
);
if (compile.status !== 0) throw new Error(`compiling ${source} failed:\n${compile.stderr}`);

interface Measurement {
  shape: 'decode' | 'mixed' | 'prompt-first' | 'alone';
  promptContext: number;
  chunk: number;
  ms: number;
}
console.log(
  `step-cost: ${modelLabel}, ${decoders} decoders at ${decoderContext} tokens, ${threads} threads, median of ${reps}`,
);
const run = spawnSync(
  binary,
  [
    modelPath,
    String(threads),
    String(decoders),
    String(decoderContext),
    promptContexts.join(','),
    chunks.join(','),
    String(reps),
  ],
  {
    encoding: 'utf8',
    env: { ...process.env, STEP_COST_BACKEND_DIR: prebuilt.binDir },
    maxBuffer: 16 * 1024 * 1024,
  },
);
if (run.status !== 0) throw new Error(`step-cost exited with ${run.status}:\n${run.stderr}`);
const measured = run.stdout
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Measurement);
const at = (shape: Measurement['shape'], pc: number, chunk: number) =>
  measured.find((m) => m.shape === shape && m.promptContext === pc && m.chunk === chunk)!.ms;

const rows = promptContexts.flatMap((pc) =>
  chunks.map((k) => {
    const decode = at('decode', pc, k);
    const mixed = at('mixed', pc, k);
    return [
      pc,
      k,
      decode.toFixed(1),
      `${mixed.toFixed(1)} (+${(mixed - decode).toFixed(1)})`,
      at('prompt-first', pc, k).toFixed(1),
      at('alone', pc, k).toFixed(1),
      ((mixed - decode) / k).toFixed(1),
    ];
  }),
);
const markdown = `${modelLabel} (${path.basename(modelPath)}), ${decoders} generating slots at ${decoderContext} tokens of context, one KV stream per slot, ${threads} threads (ggml threadpool, poll 50), flash attention ${process.env.STEP_COST_FLASH_ATTN ?? 'auto'}, median of ${reps} steps (a row's shapes take turns), ms per llama_decode:

${table(['prompt context', 'chunk', 'decode only', 'mixed (added)', 'prompt first', 'chunk alone', 'added per chunk token'], rows)}`;
recordResults(
  'step-cost',
  'Step cost by batch shape',
  {
    model: path.basename(modelPath),
    flashAttn: process.env.STEP_COST_FLASH_ATTN ?? 'auto',
    threads,
    decoders,
    decoderContext,
    reps,
    measured,
  },
  markdown,
);
