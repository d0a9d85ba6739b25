import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureRealisticModel } from '../models/test-model-path.ts';
import { startHearthProcess } from '../test/helpers/hearth-process.ts';
import { postChat } from './lib/chat-fetch.ts';

/**
 * bench:several-models: one `hearth serve` (native engine) of three copies of the 56M-parameter realistic model
 * (three files, so nothing is shared through the page cache), each under its own id. Prints the server's RSS with
 * 1, 2 and 3 models loaded, and the time to first token of a streamed chat request for a model not loaded (the
 * load included) against the same request once it is loaded (median of 3 each). Usage:
 *   node --import tsx bench/several-models.ts [-- extra serve flags]
 */
const extra = process.argv.slice(2).filter((a) => a !== '--');
const source = await ensureRealisticModel();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-bench-models-'));
const files = ['a', 'b', 'c'].map((n) => {
  const f = path.join(dir, `${n}.gguf`);
  fs.copyFileSync(source, f);
  return f;
});
const hearth = await startHearthProcess({
  args: [
    ...files.flatMap((f, i) => ['--model', `${f},id=local/${'abc'[i]}`]),
    '--engine',
    'native',
    '--slots',
    '2',
    '--context-size',
    '512',
    ...extra,
  ],
});

const rssMiB = () => {
  const status = fs.readFileSync(`/proc/${hearth.proc.pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
};

/** Time to the first content chunk of a streamed chat request, in ms. */
async function ttft(model: string): Promise<number> {
  const t = performance.now();
  const r = await postChat(hearth.baseUrl, hearth.key, {
    model,
    stream: true,
    max_tokens: 8,
    messages: [{ role: 'user', content: 'Tell me a story.' }],
  });
  if (r.status !== 200) throw new Error(`${model}: ${r.status} ${await r.text()}`);
  const reader = r.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let first = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (first === 0 && /"content":"[^"]/.test(text)) first = performance.now() - t;
  }
  return first;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  await hearth.waitReady(120_000);
  await ttft('local/a');
  const rss = [rssMiB()];
  const cold: number[] = [];
  const warm: number[] = [];
  cold.push(await ttft('local/b'));
  rss.push(rssMiB());
  cold.push(await ttft('local/c'));
  rss.push(rssMiB());
  for (let i = 0; i < 3; i++) warm.push(await ttft('local/c'));
  console.log(
    `several models (native engine, ${os.cpus()[0]?.model}, ${os.availableParallelism()} cores), 56M-parameter Q8_0 model, 3 files of ${Math.round(fs.statSync(source).size / 2 ** 20)} MiB`,
  );
  console.log(`RSS with 1 / 2 / 3 models loaded: ${rss.join(' / ')} MiB`);
  console.log(
    `TTFT cold (load included; b, then c): ${cold.map((v) => Math.round(v)).join(', ')} ms; warm (median of 3): ${Math.round(median(warm))} ms`,
  );
} finally {
  await hearth.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
