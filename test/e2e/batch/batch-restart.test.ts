import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { chatBatchLines, createChatBatch, expectEveryLineAnswered } from '../../helpers/chat-batch.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { stopThenRemove } from '../../helpers/suite-cleanup.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * A batch survives a crash (issue #41): the server is killed with SIGKILL while the batch is in progress, started
 * again on the same data dir, and finishes the batch; its output holds every custom_id exactly once (nothing lost,
 * nothing answered twice), and request_counts agree with it.
 */
const MODEL_ID = 'local/tiny-chat';
/** Enough that the kill lands mid-way: 48 lines finished 32-140 ms after the 4th on a loaded 2-core machine. */
const LINES = 400;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-batch-restart-'));
let hearth: HearthProcess | undefined;

const start = async () => {
  hearth = await startHearthProcess({
    dataDir,
    args: ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--slots', '2', '--batch-concurrency', '2'],
  });
  await hearth.waitReady();
  return hearth;
};

afterAll(() => stopThenRemove(hearth, dataDir));

describe('Batch API across a SIGKILL', () => {
  it('resumes the batch after a restart: every line answered once', async () => {
    const first = await start();
    const key = first.key;
    const clientOf = (h: HearthProcess) =>
      new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/api/inference/v1`, maxRetries: 0 });
    let client = clientOf(first);
    const lines = chatBatchLines(MODEL_ID, LINES, 'line-', (i) => `Tell story number ${i}.`, 32);
    const batch = await createChatBatch(client, lines);
    let seen = batch;
    while (seen.status === 'validating' || (seen.request_counts?.completed ?? 0) < 4) {
      await new Promise((r) => setTimeout(r, 20));
      seen = await client.batches.retrieve(batch.id);
    }
    expect(seen.status).toBe('in_progress');
    expect(seen.request_counts!.completed).toBeLessThan(LINES); // killed mid-way (the restarted server may finish before it is asked)
    await first.stop('SIGKILL');

    const second = await start();
    client = clientOf(second);
    const resumed = await client.batches.retrieve(batch.id);
    expect(resumed.request_counts!.completed).toBeGreaterThanOrEqual(seen.request_counts!.completed); // the answers recorded survived
    await expectEveryLineAnswered(client, resumed, lines);
  }, 300_000);
});
