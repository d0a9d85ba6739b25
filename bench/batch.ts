import OpenAI, { toFile } from 'openai';
import { startHearthProcess } from '../test/helpers/hearth-process.ts';
import { realTestModel } from '../test/helpers/test-model.ts';

/**
 * bench:batch: a Batch API batch of 2,000 chat-completion lines on stories260K ($HEARTH_TEST_MODEL) while one
 * interactive client streams requests one after another: the batch's lines per second, and the interactive TTFT p50
 * while the batch runs against the same server idle (measured before the batch and after it; target <= 1.5x).
 * Usage: npm run bench:batch [-- extra serve flags]
 */
const LINES = 2_000;
const MAX_TOKENS = 32;
const IDLE_REQUESTS = 20;
const extra = process.argv.slice(2).filter((a) => a !== '--');
const model = realTestModel();
if (model === undefined) throw new Error('bench:batch needs stories260K: set HEARTH_TEST_MODEL');

const hearth = await startHearthProcess({
  args: ['--model', model, '--model-id', 'local/bench', '--engine', 'native', ...extra],
  env: { HEARTH_LOG_LEVEL: 'info' },
});
try {
  await hearth.waitReady();
  const client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
  let n = 0;
  /** One interactive streamed request: ms to its first content token. */
  const ttft = async (): Promise<number> => {
    const t = performance.now();
    const stream = await client.chat.completions.create({
      model: 'local/bench',
      messages: [{ role: 'user', content: `Interactive story ${n++}: once upon a time` }],
      max_tokens: MAX_TOKENS,
      stream: true,
    });
    let first = 0;
    for await (const chunk of stream) if (first === 0 && chunk.choices[0]?.delta.content) first = performance.now() - t;
    return first;
  };
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (let i = 0; i < 3; i++) await ttft(); // warm-up
  const idleBefore: number[] = [];
  for (let i = 0; i < IDLE_REQUESTS; i++) idleBefore.push(await ttft());

  const lines = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      custom_id: `l-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: {
        model: 'local/bench',
        messages: [{ role: 'user', content: `Batch story ${i}: once upon a time` }],
        max_tokens: MAX_TOKENS,
      },
    }),
  );
  const file = await client.files.create({
    file: await toFile(Buffer.from(lines.join('\n')), 'bench.jsonl'),
    purpose: 'batch',
  });
  const created = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  const t0 = performance.now();
  let batch = created;
  let started = 0;
  const loaded: number[] = [];
  while (batch.status !== 'completed' && batch.status !== 'failed') {
    if (batch.status === 'in_progress' && started === 0) started = performance.now();
    if (batch.status === 'in_progress' && (batch.request_counts?.completed ?? 0) < LINES * 0.95)
      loaded.push(await ttft());
    else await new Promise((r) => setTimeout(r, 100));
    batch = await client.batches.retrieve(created.id);
  }
  const seconds = (performance.now() - (started || t0)) / 1000;
  const idleAfter: number[] = [];
  for (let i = 0; i < IDLE_REQUESTS; i++) idleAfter.push(await ttft());
  const idle = p50([...idleBefore, ...idleAfter]);
  console.log(
    `bench:batch on ${model} (${extra.join(' ') || 'default flags'}); the machine may be shared: compare within one run`,
  );
  console.log(
    `  batch: ${LINES} lines x max_tokens ${MAX_TOKENS}: ${batch.status}, ${batch.request_counts?.completed} ok / ${batch.request_counts?.failed} failed in ${seconds.toFixed(1)} s = ${(LINES / seconds).toFixed(1)} lines/s`,
  );
  console.log(
    `  interactive TTFT p50: idle ${idle.toFixed(1)} ms (before ${p50(idleBefore).toFixed(1)}, after ${p50(idleAfter).toFixed(1)}; ${IDLE_REQUESTS} each), during the batch ${p50(loaded).toFixed(1)} ms (${loaded.length} requests)`,
  );
  console.log(`  during / idle: ${(p50(loaded) / idle).toFixed(2)}x (target <= 1.5x)`);
} finally {
  await hearth.stop();
}
