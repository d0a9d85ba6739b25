import fs from 'node:fs';
import path from 'node:path';
import { ensureTinyChatModel } from '../models/test-model-path.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { startBenchHearth } from './lib/servers.ts';
import { sleep } from './lib/stats.ts';
import { postChat } from './lib/chat-fetch.ts';

/**
 * bench:tokenize-stall (issue 9, item 4): a prompt of characters outside the vocabulary must not stall
 * the engine. Sends one chat request whose message is BENCH_STALL_EMOJI emoji (default 150,000 = 600 KB),
 * and, BENCH_STALL_DELAY_MS (1,000) later, a small request (max_tokens 4). Reports the big request's time
 * to its answer (a 400 context_length_exceeded) and the small request's latency, next to the small
 * request's latency alone. The model: $HEARTH_TEST_MODEL, else ../shared/models/stories260K.gguf, else
 * the project's tiny chat model (both have SentencePiece vocabularies with byte fallback).
 * Extra server flags: BENCH_STALL_ARGS (e.g. "--context-size 32768"). BENCH_STALL_ROLE=assistant puts the emoji
 * in an assistant turn, which the main thread's byte bound does not count (the worker's tokenizer refuses it).
 */
const EMOJI = Number(process.env.BENCH_STALL_EMOJI ?? 150_000);
const DELAY_MS = Number(process.env.BENCH_STALL_DELAY_MS ?? 1_000);
const EXTRA = (process.env.BENCH_STALL_ARGS ?? '').split(/\s+/).filter(Boolean);
/** Who sends the emoji: 'user' (the main thread's byte bound applies) or 'assistant' (only the worker's tokenizer does). */
const ROLE = process.env.BENCH_STALL_ROLE === 'assistant' ? 'assistant' : 'user';

async function chat(
  base: string,
  key: string,
  model: string,
  messages: Array<{ role: string; content: string }>,
  maxTokens: number,
): Promise<{ ms: number; status: number; code: string | null }> {
  const started = performance.now();
  const r = await postChat(base, key, { model, messages, max_tokens: maxTokens, temperature: 0 });
  const body = (await r.json()) as { error?: { code: string | null } };
  return { ms: performance.now() - started, status: r.status, code: body.error?.code ?? null };
}

const shared = path.resolve(import.meta.dirname, '../../shared/models/stories260K.gguf');
const modelPath = process.env.HEARTH_TEST_MODEL ?? (fs.existsSync(shared) ? shared : await ensureTinyChatModel());
const hearth = await startBenchHearth(['--model', modelPath, '--model-id', 'local/bench', ...EXTRA]);
try {
  const model = 'local/bench';
  const smallMessages = [{ role: 'user', content: 'Once upon a time' }];
  const emoji = '\u{1F600}'.repeat(EMOJI);
  const bigMessages =
    ROLE === 'user'
      ? [{ role: 'user', content: emoji }]
      : [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: emoji },
          { role: 'user', content: 'Go on.' },
        ];
  for (let i = 0; i < 3; i++) await chat(hearth.baseUrl, hearth.key, model, smallMessages, 4); // warm
  const alone = await chat(hearth.baseUrl, hearth.key, model, smallMessages, 4);
  const big = chat(hearth.baseUrl, hearth.key, model, bigMessages, 4);
  await sleep(DELAY_MS);
  const small = await chat(hearth.baseUrl, hearth.key, model, smallMessages, 4);
  const bigDone = await big;
  const markdown = `model ${path.basename(modelPath)}${EXTRA.length > 0 ? ` (${EXTRA.join(' ')})` : ''}, ${EMOJI.toLocaleString('en-US')} emoji (${fmt.int(EMOJI * 4)} bytes) in a ${ROLE} message, small request (max_tokens 4) sent ${DELAY_MS} ms after\n\n${table(
    ['request', 'status', 'code', 'ms'],
    [
      ['small request alone', alone.status, alone.code ?? '', alone.ms.toFixed(1)],
      ['big request (emoji)', bigDone.status, bigDone.code ?? '', bigDone.ms.toFixed(1)],
      [`small request, ${DELAY_MS} ms after the big one`, small.status, small.code ?? '', small.ms.toFixed(1)],
    ],
  )}`;
  console.log(markdown);
  recordResults(
    'tokenize-stall',
    'Tokenizing a prompt outside the vocabulary',
    {
      model: path.basename(modelPath),
      args: EXTRA,
      role: ROLE,
      emoji: EMOJI,
      delayMs: DELAY_MS,
      alone,
      big: bigDone,
      small,
    },
    markdown,
  );
} finally {
  await hearth.stop();
}
