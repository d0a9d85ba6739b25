import { describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../../models/test-model-path.ts';
import { DEFAULT_GPU_SLOTS, gpuSlots } from '../../../src/engine/compute-placement.ts';
import { readModelMetadata } from '../../../src/engine/model-metadata.ts';

/** Slots on a GPU when --slots is not given: as many as DEFAULT_GPU_SLOTS whose f16 KV cache fits the GPU's free memory. */
describe('GPU slot count', () => {
  it('reads the KV bytes per token from the GGUF header: 2 x layers x KV heads x head size x 2 bytes', async () => {
    // The tiny llama: 2 layers, width 64, 4 heads (head size 16), 2 KV heads.
    const md = await readModelMetadata(await ensureTinyModel());
    expect(md.kvBytesPerToken).toBe(2 * 2 * 2 * 16 * 2);
  });

  it('keeps 64 slots where their KV cache fits, fewer where it does not, and at least one', () => {
    const q05b = 24 * 2 * 2 * 64 * 2; // 0.5B-class: 24 layers, 2 KV heads of 64
    expect(gpuSlots(80e9, 2048, q05b, 1)).toBe(DEFAULT_GPU_SLOTS);
    const llama7b = 32 * 8 * 2 * 128 * 2; // 7B-class with grouped KV heads: 128 KiB a token
    // 8 GB free: (6.4 GB - 1 GiB) / (4,096 tokens x 128 KiB) = 9.9 slots.
    expect(gpuSlots(8e9, 4096, llama7b, 1)).toBe(9);
    expect(gpuSlots(8e9, 4096, llama7b, 2)).toBe(4);
    expect(gpuSlots(1e9, 4096, llama7b, 1)).toBe(1);
    expect(gpuSlots(8e9, 4096, null, 1)).toBe(DEFAULT_GPU_SLOTS);
  });
});
