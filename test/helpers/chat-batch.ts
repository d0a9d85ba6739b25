import OpenAI, { toFile } from 'openai';
import { expect } from 'vitest';
import { batchEnded, batchFileLines } from './batch-polling.ts';

/** One line of a Batch API input file: a chat completion with one user message. */
export interface ChatBatchLine {
  custom_id: string;
  method: 'POST';
  url: '/v1/chat/completions';
  body: { model: string; messages: Array<{ role: 'user'; content: string }>; max_tokens: number };
}

/** `count` chat lines for `model`: line i has custom_id `${idPrefix}${i}`, the user message `prompt(i)`, `maxTokens`. */
export function chatBatchLines(
  model: string,
  count: number,
  idPrefix: string,
  prompt: (i: number) => string,
  maxTokens: number,
): ChatBatchLine[] {
  return Array.from({ length: count }, (_, i) => ({
    custom_id: `${idPrefix}${i}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: prompt(i) }], max_tokens: maxTokens },
  }));
}

/** The input file text of `lines`: one JSON line each, joined by '\n' (no newline after the last). */
export const batchInputText = (lines: readonly unknown[]): string => lines.map((l) => JSON.stringify(l)).join('\n');

/** Uploads `lines` as `in.jsonl` (batchInputText) with `client` and creates a 24-hour chat-completions batch of it. */
export async function createChatBatch(client: OpenAI, lines: readonly unknown[]): Promise<OpenAI.Batches.Batch> {
  const file = await client.files.create({
    file: await toFile(Buffer.from(batchInputText(lines)), 'in.jsonl'),
    purpose: 'batch',
  });
  return client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

/**
 * Waits (batchEnded, polling through `client`) for `batch` and asserts it completed every one of `lines` without a
 * failure, its output file (read through `outputReader`) holding each line's custom_id exactly once.
 */
export async function expectEveryLineAnswered(
  client: OpenAI,
  batch: OpenAI.Batches.Batch,
  lines: readonly ChatBatchLine[],
  outputReader: OpenAI = client,
): Promise<void> {
  const done = await batchEnded(client, batch);
  expect(done.status).toBe('completed');
  expect(done.request_counts).toEqual({ total: lines.length, completed: lines.length, failed: 0 });
  const ids = (await batchFileLines(outputReader, done.output_file_id)).map((l) => l.custom_id);
  expect(ids).toHaveLength(lines.length);
  expect(new Set(ids)).toEqual(new Set(lines.map((l) => l.custom_id)));
}
