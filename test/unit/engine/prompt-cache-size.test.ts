import { describe, expect, it } from 'vitest';
import { defaultPromptCacheMiB } from '../../../src/engine/prompt-cache-size.ts';
import { parseServeConfig } from '../../../src/config/config.ts';

const GiB = 1024 ** 3;

/** Issue 23, item 4: --prompt-cache-mib's default is sized from the machine's memory and the worker count. */
describe('defaultPromptCacheMiB', () => {
  it('is an eighth of the memory over the workers, at most 2048 MiB per worker', () => {
    expect(defaultPromptCacheMiB(1, 16 * GiB)).toBe(2048);
    expect(defaultPromptCacheMiB(1, 64 * GiB)).toBe(2048);
    expect(defaultPromptCacheMiB(2, 8 * GiB)).toBe(512);
    expect(defaultPromptCacheMiB(4, 4 * GiB)).toBe(128);
    expect(defaultPromptCacheMiB(1, 1 * GiB)).toBe(128);
  });

  it('stays unset in the configuration unless given (main.ts sizes it), and a given value wins', () => {
    expect(parseServeConfig([], {}).promptCacheMiB).toBeUndefined();
    expect(parseServeConfig(['--prompt-cache-mib', '0'], {}).promptCacheMiB).toBe(0);
  });
});
