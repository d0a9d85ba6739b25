import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../../src/cli/hearth.ts';
import { SERVE_SETTINGS } from '../../../src/config/config-spec.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-config-print-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

/** Runs `hearth ...argv` and returns its exit code and what it printed. */
async function hearth(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runCli(argv, (s) => lines.push(s));
  return { code, out: lines.join('\n') };
}

describe('hearth config print', () => {
  const file = path.join(dir, 'hearth.yaml');
  fs.writeFileSync(file, 'slots: 6\nmax-tokens: 512\nsecret-key: file-secret-value\n');

  it('prints each setting once with its value and source (flag > env > file > default), secrets as (set)', async () => {
    vi.stubEnv('HEARTH_MAX_TOKENS', '1024');
    vi.stubEnv('HEARTH_METRICS_TOKEN', 'env-token-value');
    const { code, out } = await hearth('config', 'print', '--config', file, '--port', '9100');
    expect(code).toBe(0);
    const rows = new Map(
      out.split('\n').map((line) => {
        const [name, value, source] = line.trim().split(/\s{2,}/);
        return [name, { value, source }];
      }),
    );
    expect(rows.size).toBe(SERVE_SETTINGS.length);
    expect(rows.get('port')).toEqual({ value: '9100', source: 'flag' });
    expect(rows.get('max-tokens')).toEqual({ value: '1024', source: 'env' });
    expect(rows.get('slots')).toEqual({ value: '6', source: 'file' });
    expect(rows.get('queue-limit')).toEqual({ value: '64', source: 'default' });
    expect(rows.get('secret-key')).toEqual({ value: '(set)', source: 'file' });
    expect(rows.get('metrics-token')).toEqual({ value: '(set)', source: 'env' });
    expect(rows.get('public-url')).toEqual({ value: '(unset)', source: 'default' });
    expect(out).not.toContain('file-secret-value');
    expect(out).not.toContain('env-token-value');
    // Aligned: every value starts in the same column.
    const valueColumns = new Set(out.split('\n').map((line) => line.search(/(?<=\S {2,})\S/)));
    expect(valueColumns.size).toBe(1);
  });

  it('--json gives the same per name, secrets redacted, unset as null', async () => {
    const { code, out } = await hearth(
      'config',
      'print',
      '--json',
      '--config',
      file,
      '--secret-key',
      'flag-secret-value',
    );
    expect(code).toBe(0);
    const settings = JSON.parse(out) as Record<string, { value: unknown; source: string }>;
    expect(Object.keys(settings)).toEqual(SERVE_SETTINGS.map((s) => s.flag.slice(2)));
    expect(settings['slots']).toEqual({ value: 6, source: 'file' });
    expect(settings['secret-key']).toEqual({ value: '(set)', source: 'flag' });
    expect(settings['metrics-token']).toEqual({ value: null, source: 'default' });
    expect(settings['config']).toEqual({ value: file, source: 'flag' });
    expect(out).not.toContain('secret-value');
  });

  it('keeps each model of a models: list: its source, id (given or derived) and own settings, in text and --json', async () => {
    const models = path.join(dir, 'models.yaml');
    fs.writeFileSync(
      models,
      [
        'models:',
        '  - source: /m/stories260K.gguf',
        '    id: local/tiny-stories',
        '    slots: 4',
        '    context-size: 512',
        '  - /m/llama-2-tiny-random.gguf,gpu-layers=0',
        '  - hf:someone/chat-GGUF/chat-Q4.gguf',
        '',
      ].join('\n'),
    );
    const text = await hearth('config', 'print', '--config', models);
    expect(text.code).toBe(0);
    const modelLines = text.out
      .split('\n')
      .filter((l) => l.startsWith('model '))
      .map((l) => l.trim().split(/\s{2,}/));
    expect(modelLines).toEqual([
      ['model', '/m/stories260K.gguf,id=local/tiny-stories,slots=4,context-size=512', 'file'],
      ['model', '/m/llama-2-tiny-random.gguf,id=local/llama-2-tiny-random,gpu-layers=0', 'file'],
      ['model', 'hf:someone/chat-GGUF/chat-Q4.gguf,id=someone/chat', 'file'],
    ]);
    const json = JSON.parse((await hearth('config', 'print', '--json', '--config', models)).out) as Record<
      string,
      { value: unknown; source: string; models?: unknown }
    >;
    expect(json['model']).toEqual({
      value: '/m/stories260K.gguf',
      source: 'file',
      models: [
        { source: '/m/stories260K.gguf', id: 'local/tiny-stories', slots: 4, 'context-size': 512 },
        { source: '/m/llama-2-tiny-random.gguf', id: 'local/llama-2-tiny-random', 'gpu-layers': 0 },
        { source: 'hf:someone/chat-GGUF/chat-Q4.gguf', id: 'someone/chat' },
      ],
    });
    // One model from a flag with --model-id: the id it is served as.
    const one = JSON.parse(
      (await hearth('config', 'print', '--json', '--model', '/m/a.gguf', '--model-id', 'team/a')).out,
    ) as Record<string, { models?: unknown }>;
    expect(one['model']!.models).toEqual([{ source: '/m/a.gguf', id: 'team/a' }]);
  });

  it('fails like serve on a bad setting (exit 2)', async () => {
    expect((await hearth('config', 'print', '--port', 'x')).code).toBe(2);
    expect((await hearth('config', 'print', '--config', path.join(dir, 'none.yaml'))).code).toBe(2);
  });
});

describe('hearth serve --help and --help-all', () => {
  it('--help lists the everyday settings, --help-all every one, neither a deprecated name', async () => {
    const help = (await hearth('serve', '--help')).out;
    const all = (await hearth('serve', '--help-all')).out;
    const listed = (text: string, flag: string) => new RegExp(`^ {2}${flag} <`, 'm').test(text);
    for (const s of SERVE_SETTINGS) {
      expect(listed(all, s.flag), s.flag).toBe(true);
      expect(listed(help, s.flag), s.flag).toBe(s.group === 'everyday');
      if ('deprecated' in s) expect(all).not.toContain(`${s.deprecated.flag} `);
    }
    for (const seam of ['--engine', '--provision-delay-ms', '--cores', '--openai-base-url', '--thread-poll'])
      expect(listed(help, seam), seam).toBe(false);
    expect(help).toContain('--help-all');
  });
});
