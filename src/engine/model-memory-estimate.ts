import fs from 'node:fs';
import { readModelMetadata } from './model-metadata.ts';

/**
 * What a loaded model is counted for against --model-memory-mib (docs/models.md): the file's size (the weights)
 * plus the KV cache of every slot of every worker, `context x slots x workers x KV bytes per token` (f16, from the
 * GGUF's header; the context capped by the model's). 0 while the file is not there (a hub model not pulled yet);
 * the file's size alone when its header cannot be read (the load itself then says what is wrong). Compute buffers,
 * the workers' own memory and the host prompt cache are not counted.
 */
export async function modelMemoryEstimate(
  file: string,
  o: { contextSize: number; slots: number; workers: number },
): Promise<number> {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch {
    return 0;
  }
  try {
    const md = await readModelMetadata(file);
    const context = Math.min(o.contextSize, md.contextLength ?? Infinity);
    return size + (md.kvBytesPerToken ?? 0) * context * o.slots * o.workers;
  } catch {
    return size;
  }
}
