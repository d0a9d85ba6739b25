import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadServeConfig } from '../../../src/config/config.ts';

/** Several models on one server (contract.md): `--model` given several times, and the config file's `models:` list. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-model-entries-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const yamlFile = (text: string) => {
  const file = path.join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  fs.writeFileSync(file, text);
  return file;
};

describe('models to serve', () => {
  it('one --model is one model, as before (its id from --model-id)', () => {
    const { config } = loadServeConfig(['--model', '/m/a.gguf', '--model-id', 'local/alpha'], {});
    expect(config.model).toBe('/m/a.gguf');
    expect(config.models).toEqual([{ source: '/m/a.gguf', id: 'local/alpha' }]);
  });

  it('--model given several times keeps every model in order, each with its own options', () => {
    const { config } = loadServeConfig(
      [
        '--model',
        '/m/a.gguf,id=local/a,slots=2',
        '--model=/m/b.gguf,context-size=512,gpu-layers=0',
        '--model',
        'hf:u/r-GGUF/f.gguf,gpu-layers=auto',
      ],
      {},
    );
    expect(config.models).toEqual([
      { source: '/m/a.gguf', id: 'local/a', slots: 2 },
      { source: '/m/b.gguf', contextSize: 512, gpuLayers: 0 },
      { source: 'hf:u/r-GGUF/f.gguf', gpuLayers: 'auto' },
    ]);
    expect(config.model).toBe('/m/a.gguf');
  });

  it('a path holding a comma is kept whole when what follows is no option', () => {
    expect(loadServeConfig(['--model', '/m/a,b.gguf'], {}).config.models).toEqual([{ source: '/m/a,b.gguf' }]);
  });

  it.each([
    [['--model', '/m/a.gguf,slots=0'], /--model.*slots: 0 is out of range 1..256/],
    [['--model', '/m/a.gguf,id=noslash'], /id must look like <namespace>\/<model_name>/],
    [['--model', '/m/a.gguf,context-size=big'], /context-size: expected an integer/],
    [['--model', '/m/a.gguf,slots=1,slots=2'], /'slots' given twice/],
    [['--model', '/m/a.gguf', '--model', '/m/b.gguf', '--model-id', 'local/x'], /--model-id: names one model/],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => loadServeConfig(argv, {})).toThrowError(ConfigError);
    expect(() => loadServeConfig(argv, {})).toThrowError(message);
  });

  it('the config file takes a models: list of sources and mappings; flags win over it', () => {
    const file = yamlFile(
      'models:\n  - /m/a.gguf,id=local/a\n  - source: /m/b.gguf\n    id: local/b\n    slots: 3\n    context-size: 1024\n    gpu-layers: 0\n',
    );
    const { config, sources } = loadServeConfig(['--config', file], {});
    expect(config.models).toEqual([
      { source: '/m/a.gguf', id: 'local/a' },
      { source: '/m/b.gguf', id: 'local/b', slots: 3, contextSize: 1024, gpuLayers: 0 },
    ]);
    expect(sources.model).toBe('file');
    expect(loadServeConfig(['--config', file, '--model', '/m/c.gguf'], {}).config.models).toEqual([
      { source: '/m/c.gguf' },
    ]);
  });

  it.each([
    ['models: []\n', /models: expected a non-empty list/],
    ['models:\n  - source: /m/a.gguf\n    colour: red\n', /models\[0\]: unknown key 'colour'/],
    ['models:\n  - 12\n', /models\[0\]: expected a source string or a mapping/],
    ['model: /m/a.gguf\nmodels:\n  - /m/b.gguf\n', /'model' and 'models' are both set/],
  ])('a bad models: list is a ConfigError naming the file and the item (%j)', (text, message) => {
    const file = yamlFile(text);
    expect(() => loadServeConfig(['--config', file], {})).toThrowError(message);
    expect(() => loadServeConfig(['--config', file], {})).toThrowError(file);
  });
});
