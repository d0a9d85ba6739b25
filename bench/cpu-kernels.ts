import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { CPU_KERNELS_DIR, CPU_KERNELS_LIBRARY, readCpuKernelsBuild } from '../native/paths.ts';
import {
  ensureCeilingTools,
  probeCpuBackend,
  quantizeModel,
  runBatchedBench,
  type CeilingRow,
} from './lib/kernel-ceiling.ts';
import { SHAPES } from './lib/model-shapes.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { percentile } from './lib/stats.ts';

/**
 * bench:cpu-kernels: the two ggml CPU libraries `--cpu-kernels auto` chooses between, on the kernels alone. It runs
 * llama-batched-bench (no HTTP, no sampling) on node-llama-cpp's prebuilt library for this CPU and on Hearth's native
 * build (native/build/cpu-kernels/, with Hearth's own kernels: native/cpu-kernels/), in alternating rounds. It
 * reports decode and prefill tok/s per number of sequences, medians, and native / prebuilt.
 *
 *   npm run bench:cpu-kernels -- [--shapes 56m,0.5b-q8] [--sequences 1,2,4,8,12,16] [--rounds 3]
 *       [--threads 2] [--prompt 16] [--gen 64] [--no-results-md]
 */
const { values } = parseArgs({
  options: {
    shapes: { type: 'string', default: '56m,0.5b-q8' },
    sequences: { type: 'string', default: '1,2,4,8,12,16' },
    rounds: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
    prompt: { type: 'string', default: '16' },
    gen: { type: 'string', default: '64' },
    'no-results-md': { type: 'boolean', default: false },
  },
});

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

const sequences = values.sequences.split(',').map((s) => positive('sequences', s));
const rounds = positive('rounds', values.rounds);
const threads = positive('threads', values.threads);
const promptTokens = positive('prompt', values.prompt);
const genTokens = positive('gen', values.gen);
const log = (s: string) => process.stderr.write(`[bench:cpu-kernels] ${s}\n`);

const nativeLibrary = path.join(CPU_KERNELS_DIR, CPU_KERNELS_LIBRARY);
if (!existsSync(nativeLibrary)) throw new Error(`${nativeLibrary} is missing: run npm run build:native (needs cmake)`);
const prebuilt = probeCpuBackend(process.cwd());
const libraries = { prebuilt, native: nativeLibrary };
const tools = await ensureCeilingTools(log);

const sections: string[] = [];
const data: Record<string, unknown> = {};
for (const key of values.shapes.split(',')) {
  const spec = SHAPES[key];
  if (!spec) throw new Error(`--shapes: ${key} is not one of ${Object.keys(SHAPES).join(', ')}`);
  let model = await ensureRealisticModel(spec.options ?? {});
  if (spec.quantizeTo) {
    const to = model.replace(/\.gguf$/, `-${spec.quantizeTo}.gguf`);
    quantizeModel(tools, prebuilt, model, to, spec.quantizeTo, threads);
    model = to;
  }
  const runs: Record<keyof typeof libraries, CeilingRow[][]> = { prebuilt: [], native: [] };
  for (let round = 0; round < rounds; round++) {
    for (const which of ['prebuilt', 'native'] as const) {
      log(`${key}: round ${round + 1}/${rounds}, ${which} (${path.basename(libraries[which])})`);
      const r = runBatchedBench(tools, libraries[which], model, {
        threads,
        promptTokens,
        genTokens,
        sequences,
        batchSize: 512,
      });
      runs[which].push(r.rows);
    }
  }
  const at = (which: keyof typeof libraries, n: number, field: 'tgTokPerS' | 'ppTokPerS') =>
    percentile(
      runs[which].map((rows) => rows.find((row) => row.sequences === n)?.[field] ?? NaN),
      50,
    );
  const rows = sequences.map((n) => {
    const [tgP, tgN, ppP, ppN] = [
      at('prebuilt', n, 'tgTokPerS'),
      at('native', n, 'tgTokPerS'),
      at('prebuilt', n, 'ppTokPerS'),
      at('native', n, 'ppTokPerS'),
    ];
    return [
      n,
      fmt.num(tgP),
      fmt.num(tgN),
      `**${(tgN / tgP).toFixed(2)}**`,
      fmt.num(ppP),
      fmt.num(ppN),
      (ppN / ppP).toFixed(2),
    ];
  });
  data[key] = { model, runs };
  sections.push(
    `### ${spec.label}\n\n` +
      table(
        [
          'sequences',
          `decode tok/s, ${path.basename(prebuilt)}`,
          'decode tok/s, native',
          'native / prebuilt',
          'prefill tok/s, prebuilt',
          'prefill tok/s, native',
          'native / prebuilt',
        ],
        rows,
      ),
  );
}

const build = readCpuKernelsBuild();
const markdown = [
  `llama-batched-bench (\`-npp ${promptTokens} -ntg ${genTokens} -t ${threads}\`), medians (nearest rank) of ${rounds} alternating rounds: node-llama-cpp's ${path.basename(prebuilt)} against the native build (${build?.flags[0] ?? '?'}, Hearth's kernels ${build?.hearthKernels ?? 'none'}).`,
  ...sections,
].join('\n\n');
if (values['no-results-md']) console.log(markdown);
else recordResults('cpu-kernels', 'CPU kernels: prebuilt vs native build', { libraries, data }, markdown);
