/**
 * Writes the project's generated models and prints their paths:
 *   node --import tsx models/write-test-models.ts [--out <dir>] [--tiny-only]
 * Without --out, the tiny models go to the test model dir and the realistic one to the model cache
 * (see model-cache.ts); existing files with the same options are reused.
 */
import { parseArgs } from 'node:util';
import { stat } from 'node:fs/promises';
import { defaultModelCacheDir, defaultTestModelDir } from './model-cache.ts';
import { ensureRealisticModel, ensureTinyChatModel, ensureTinyModel } from './test-model-path.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    'tiny-only': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log('usage: node --import tsx models/write-test-models.ts [--out <dir>] [--tiny-only]');
  process.exit(0);
}

async function report(label: string, job: Promise<string>): Promise<void> {
  const started = performance.now();
  const path = await job;
  const { size } = await stat(path);
  const ms = (performance.now() - started).toFixed(0);
  console.log(`${label.padEnd(10)} ${path}  (${(size / 2 ** 20).toFixed(2)} MiB, ${ms} ms)`);
}

await report('tiny', ensureTinyModel({}, values.out ?? defaultTestModelDir()));
await report('tiny-chat', ensureTinyChatModel({}, values.out ?? defaultTestModelDir()));
if (!values['tiny-only']) await report('realistic', ensureRealisticModel({}, values.out ?? defaultModelCacheDir()));
