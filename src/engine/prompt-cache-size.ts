import os from 'node:os';

/** The most a worker's host prompt cache takes by default (llama-server's --cache-ram default, 8 GiB, is per server). */
export const PROMPT_CACHE_DEFAULT_MAX_MIB = 2048;
/** The share of the machine's memory all workers' prompt caches take together by default. */
export const PROMPT_CACHE_MEMORY_SHARE = 1 / 8;

/**
 * `--prompt-cache-mib` when not set: an eighth of the memory this process may use (the machine's, or its cgroup's
 * limit when lower) over the workers, at most PROMPT_CACHE_DEFAULT_MAX_MIB per worker. 16 GiB and one worker:
 * 2048 MiB; 8 GiB and two workers: 512 MiB each. The cache fills up to it and stays there (README "Memory").
 */
export function defaultPromptCacheMiB(workers: number, totalBytes: number = availableMemory()): number {
  const share = Math.floor(((totalBytes / (1 << 20)) * PROMPT_CACHE_MEMORY_SHARE) / Math.max(1, workers));
  return Math.max(0, Math.min(PROMPT_CACHE_DEFAULT_MAX_MIB, share));
}

function availableMemory(): number {
  const total = os.totalmem();
  const limit = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  return limit !== undefined && limit > 0 && limit < total ? limit : total;
}
