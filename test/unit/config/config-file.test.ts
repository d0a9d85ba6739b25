import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadServeConfig } from '../../../src/config/config.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-config-file-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
/** Writes a YAML config file and returns its path. */
function yamlFile(text: string): string {
  const file = path.join(dir, `hearth-${n++}.yaml`);
  fs.writeFileSync(file, text);
  return file;
}

describe('serve config file (--config, HEARTH_CONFIG)', () => {
  it('ranks flag over env over file over default, and says which won', () => {
    const file = yamlFile(
      'port: 7000\nworkers: 3\nslots: 5\nbody-limit-bytes: 2097152\nengine: instant\nweight-repack: false\n',
    );
    const { config, sources } = loadServeConfig(['--config', file, '--port', '9000'], {
      HEARTH_PORT: '8000',
      HEARTH_WORKERS: '2',
    });
    expect([config.port, sources.port]).toEqual([9000, 'flag']);
    expect([config.workers, sources.workers]).toEqual([2, 'env']);
    expect([config.slots, sources.slots]).toEqual([5, 'file']);
    expect([config.bodyLimit, sources.bodyLimit]).toEqual([2097152, 'file']);
    expect([config.engine, config.weightRepack]).toEqual(['instant', false]);
    expect([config.maxTokens, sources.maxTokens]).toEqual([4096, 'default']);
    expect([config.configFile, sources.configFile]).toEqual([file, 'flag']);
  });

  it('is found through HEARTH_CONFIG too, and takes secrets and gpu-layers as a number', () => {
    const file = yamlFile('secret-key: from-the-file\ngpu-layers: 12\n');
    const { config, sources } = loadServeConfig([], { HEARTH_CONFIG: file });
    expect([config.secretKey, sources.secretKey]).toEqual(['from-the-file', 'file']);
    expect(config.gpuLayers).toBe(12);
    expect(sources.configFile).toBe('env');
  });

  it('accepts an empty file', () => {
    expect(loadServeConfig(['--config', yamlFile('# nothing yet\n')], {}).config.port).toBe(8080);
  });

  it.each([
    ['an unknown key', 'port: 1\nbodyLimit: 5\n', /: unknown setting 'bodyLimit'/],
    ['the camelCase key', 'bodyLimitBytes: 5\n', /unknown setting 'bodyLimitBytes'/],
    ['a string for an int', 'port: "8080"\n', /: port: expected an integer, got string "8080"/],
    ['a number for a bool', 'trust-proxy: 1\n', /: trust-proxy: expected true or false, got number 1/],
    ['a list for a string', 'host: [a, b]\n', /: host: expected a string, got a list/],
    ['no value', 'model:\n', /: model: expected a string, got no value/],
    ['an int out of range', 'port: 70000\n', /: port: 70000 is out of range/],
    ['a value not in the enum', 'engine: gpu\n', /: engine: must be one of/],
    ['a file naming a file', 'config: other.yaml\n', /: 'config' cannot be set in a config file/],
    ['a setting twice (new and former name)', 'body-limit-bytes: 2048\nbody-limit: 4096\n', /body-limit: set twice/],
    ['invalid YAML', 'port: [1, 2\n', /: invalid YAML: /],
    ['a duplicated key', 'port: 1\nport: 2\n', /: invalid YAML: /],
    ['a list at the top', '- port\n', /: expected a mapping of settings/],
  ])('refuses %s with a ConfigError naming the file and key', (_what, text, message) => {
    const file = yamlFile(text);
    expect(() => loadServeConfig(['--config', file], {})).toThrowError(ConfigError);
    expect(() => loadServeConfig(['--config', file], {})).toThrowError(message);
    expect(() => loadServeConfig(['--config', file], {})).toThrowError(file);
  });

  it('refuses a file it cannot read, naming it', () => {
    const missing = path.join(dir, 'missing.yaml');
    expect(() => loadServeConfig(['--config', missing], {})).toThrowError(ConfigError);
    expect(() => loadServeConfig([], { HEARTH_CONFIG: missing })).toThrowError(
      `${missing}: cannot read the config file (ENOENT)`,
    );
  });
});

describe('deprecated setting names', () => {
  it('take a former flag with one warning that names the new one', () => {
    const { config, warnings } = loadServeConfig(['--body-limit', '4096', '--app-memory-limit=512'], {});
    expect([config.bodyLimit, config.appMemoryLimit]).toEqual([4096, 512]);
    expect(warnings).toEqual([
      '--body-limit is deprecated: use --body-limit-bytes',
      '--app-memory-limit is deprecated: use --app-memory-limit-mib',
    ]);
  });

  it('take a former variable when the new one is unset, with a warning', () => {
    const old = loadServeConfig([], { HEARTH_APP_START_TIMEOUT: '30' });
    expect(old.config.appStartTimeout).toBe(30);
    expect(old.sources.appStartTimeout).toBe('env');
    expect(old.warnings).toEqual(['HEARTH_APP_START_TIMEOUT is deprecated: use HEARTH_APP_START_TIMEOUT_S']);
    expect(
      loadServeConfig([], { HEARTH_APP_START_TIMEOUT: '30', HEARTH_APP_START_TIMEOUT_S: '45' }).config.appStartTimeout,
    ).toBe(45);
  });

  it('take a former key in the file with a warning, and name the former flag in its errors', () => {
    const file = yamlFile('stream-buffer-limit: 8192\n');
    const { config, warnings } = loadServeConfig(['--config', file], {});
    expect(config.streamBufferLimit).toBe(8192);
    expect(warnings).toEqual([`${file}: stream-buffer-limit is deprecated: use stream-buffer-limit-bytes`]);
    expect(() => loadServeConfig(['--app-proxy-timeout', 'soon'], {})).toThrowError(
      /--app-proxy-timeout: expected an integer/,
    );
  });

  it('warn about nothing when only new names are used', () => {
    expect(loadServeConfig(['--body-limit-bytes', '4096'], { HEARTH_APP_GRACE_PERIOD_S: '5' }).warnings).toEqual([]);
  });
});
