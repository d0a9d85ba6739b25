import type OpenAI from 'openai';

type Batch = OpenAI.Batches.Batch;

const ENDED: readonly string[] = ['completed', 'failed', 'cancelled', 'expired'];

/**
 * Polls a Batch API batch every `everyMs` until it has ended (completed, failed, cancelled or expired) or
 * `timeoutMs` has passed; returns its last state (the caller asserts which). `batch`: the state it starts from.
 */
export async function batchEnded(client: OpenAI, batch: Batch, timeoutMs = 240_000, everyMs = 200): Promise<Batch> {
  let done = batch;
  for (
    const deadline = Date.now() + timeoutMs;
    !ENDED.includes(done.status) && Date.now() < deadline;
    done = await client.batches.retrieve(batch.id)
  )
    await new Promise((r) => setTimeout(r, everyMs));
  return done;
}

/** Polls a batch every `everyMs` until it is past validation and has answered at least one line; its state then. */
export async function batchStarted(client: OpenAI, batch: Batch, everyMs = 50): Promise<Batch> {
  let b = batch;
  while (b.request_counts?.completed === 0 || b.status === 'validating') {
    await new Promise((r) => setTimeout(r, everyMs));
    b = await client.batches.retrieve(batch.id);
  }
  return b;
}

/** The JSON lines of a batch's output or error file, in file order; none when the batch has no such file. */
export async function batchFileLines<T = { custom_id: string }>(
  client: OpenAI,
  fileId: string | null | undefined,
): Promise<T[]> {
  if (!fileId) return [];
  return (await (await client.files.content(fileId)).text())
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as T);
}
