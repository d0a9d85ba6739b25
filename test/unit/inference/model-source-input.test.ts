import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { parseModelSourceInput } from '../../../src/inference/model-source-input.ts';

/** POST /api/v1/models's body: a hub URI, or a GGUF whose real path lies inside the models dir; anything else a 400. */
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-source-input-'));
const dir = path.join(root, 'models');
const sibling = path.join(root, 'models-evil'); // shares the models dir's name as a prefix
fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
fs.mkdirSync(sibling);
const gguf = Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(16)]);
fs.writeFileSync(path.join(dir, 'ok.gguf'), gguf);
fs.writeFileSync(path.join(dir, 'sub', 'deep.gguf'), gguf);
fs.writeFileSync(path.join(sibling, 'evil.gguf'), gguf);
fs.writeFileSync(path.join(dir, 'text.gguf'), 'hello');
fs.symlinkSync(path.join(sibling, 'evil.gguf'), path.join(dir, 'out.gguf'));
fs.symlinkSync(sibling, path.join(dir, 'outdir'));
fs.symlinkSync(path.join(dir, 'ok.gguf'), path.join(dir, 'in.gguf'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const refusal = (body: unknown): ApiError => {
  try {
    parseModelSourceInput(body, dir);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`);
};

describe('parseModelSourceInput', () => {
  it('takes a GGUF in the models dir (relative, absolute, nested, or a link that stays inside) at its real path', () => {
    const real = fs.realpathSync(path.join(dir, 'ok.gguf'));
    expect(parseModelSourceInput({ source: 'ok.gguf' }, dir).source).toEqual({
      kind: 'local',
      path: real,
      modelId: 'local/ok',
    });
    expect(parseModelSourceInput({ source: path.join(dir, 'ok.gguf'), id: 'local/x' }, dir).source).toMatchObject({
      path: real,
      modelId: 'local/x',
    });
    expect(parseModelSourceInput({ source: 'sub/deep.gguf' }, dir).source).toMatchObject({ modelId: 'local/deep' });
    expect(parseModelSourceInput({ source: 'in.gguf' }, dir).source).toMatchObject({ path: real });
  });

  it('takes a hub URI, its id derived as --model derives it', () => {
    expect(parseModelSourceInput({ source: 'hf:user/Some-Model-GGUF/some.Q4.gguf' }, dir).source).toEqual({
      kind: 'hub',
      uri: 'hf:user/Some-Model-GGUF/some.Q4.gguf',
      modelId: 'user/Some-Model',
    });
  });

  it.each([
    ['../models-evil/evil.gguf', 'invalid_model_source'],
    [path.join(sibling, 'evil.gguf'), 'invalid_model_source'],
    ['out.gguf', 'invalid_model_source'],
    ['outdir/evil.gguf', 'invalid_model_source'],
    ['sub/../../models-evil/evil.gguf', 'invalid_model_source'],
    ['.', 'invalid_model_source'],
    ['sub', 'invalid_model_source'],
    ['text.gguf', 'invalid_model_source'],
    ['nope.gguf', 'invalid_model_source'],
    ['/etc/passwd', 'invalid_model_source'],
    ['file:///etc/passwd', 'invalid_value'],
    ['https://huggingface.co/x/y/z.gguf', 'invalid_value'],
    ['hf:only-user', 'invalid_value'],
    ['hf:u/r/file.bin', 'invalid_value'],
    ['ok\u0000.gguf', 'invalid_value'],
    ['', 'invalid_value'],
    ['x'.repeat(2000), 'invalid_value'],
  ])('refuses %j (400 %s naming source)', (source, code) => {
    expect(refusal({ source })).toMatchObject({ status: 400, code, param: 'source' });
  });

  it.each([
    [null, null],
    [[], null],
    [{ source: 12 }, 'source'],
    [{ source: 'ok.gguf', id: 'noslash' }, 'id'],
    [{ source: 'ok.gguf', id: 5 }, 'id'],
    [{ source: 'ok.gguf', path: '/x' }, 'path'],
  ])('refuses the body %j naming %s', (body, param) => {
    expect(refusal(body)).toMatchObject({ status: 400, param });
  });

  it('refuses a local path when the models dir does not exist', () => {
    expect(() => parseModelSourceInput({ source: 'ok.gguf' }, path.join(root, 'absent'))).toThrowError(
      /models dir does not exist/,
    );
  });
});
