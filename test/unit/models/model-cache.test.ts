import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureGeneratedFile, optionsHash } from '../../../models/model-cache.ts';
import { ensureTinyChatModel, ensureTinyModel } from '../../../models/test-model-path.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-model-cache-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ensureGeneratedFile', () => {
  it('writes once for concurrent callers and reuses the file afterwards', async () => {
    const path = join(dir, 'once', 'x.bin');
    let writes = 0;
    const write = async (tmp: string) => {
      writes++;
      await writeFile(tmp, 'content');
    };
    const results = await Promise.all([ensureGeneratedFile(path, write), ensureGeneratedFile(path, write)]);
    expect(results).toEqual([path, path]);
    expect(await ensureGeneratedFile(path, write)).toBe(path);
    expect(writes).toBe(1);
    expect(await readFile(path, 'utf8')).toBe('content');
    expect(await readdir(join(dir, 'once'))).toEqual(['x.bin']); // no temporary left behind
  });

  it('leaves nothing behind when the write fails, and tries again next time', async () => {
    const path = join(dir, 'fail', 'y.bin');
    const failing = async (tmp: string) => {
      await writeFile(tmp, 'partial');
      throw new Error('disk full');
    };
    await expect(ensureGeneratedFile(path, failing)).rejects.toThrow('disk full');
    expect(await readdir(join(dir, 'fail'))).toEqual([]);
    await ensureGeneratedFile(path, (tmp) => writeFile(tmp, 'ok'));
    expect(await readFile(path, 'utf8')).toBe('ok');
  });
});

describe('optionsHash', () => {
  it('ignores key order and distinguishes values', () => {
    expect(optionsHash({ a: 1, b: { c: 2, d: 3 } })).toBe(optionsHash({ b: { d: 3, c: 2 }, a: 1 }));
    expect(optionsHash({ a: 1 })).not.toBe(optionsHash({ a: 2 }));
  });
});

describe('ensureTinyModel', () => {
  it('returns one stable path per option set, distinct for the chat variant and other options', async () => {
    const plain = await ensureTinyModel({}, dir);
    expect(await ensureTinyModel({ seed: 1 }, dir)).toBe(plain); // defaults resolve to the same file
    const chat = await ensureTinyChatModel({}, dir);
    const other = await ensureTinyModel({ seed: 9 }, dir);
    expect(new Set([plain, chat, other]).size).toBe(3);
    expect(chat).toMatch(/tiny-llama-chat-[0-9a-f]{16}\.gguf$/);
    expect((await readFile(plain)).subarray(0, 4).toString()).toBe('GGUF');
  });
});
