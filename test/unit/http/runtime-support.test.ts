import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  currentRuntime,
  refusal,
  refuseUnsupportedRuntime,
  type Runtime,
  supportedLine,
  SUPPORTED_TEXT,
} from '../../../src/http/runtime-support.ts';
import { uwsBuild } from '../../../src/http/uws.ts';

const linux = (node: string, abi: string, glibc: string | null): Runtime => ({
  node,
  abi,
  glibc,
  platform: 'linux',
  arch: 'x64',
});
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('supported runtimes (contract: Runtimes and the image)', () => {
  it('Node 22 and 24 need glibc 2.38 (the btc-vision uWS build)', () => {
    expect(supportedLine(linux('v24.21.0', '137', '2.41'))?.major).toBe(24);
    expect(supportedLine(linux('v22.23.3', '127', '2.39'))?.major).toBe(22);
    expect(supportedLine(linux('v24.0.0', '137', '2.38'))?.major).toBe(24);
    expect(supportedLine(linux('v24.21.0', '137', '2.36'))).toBeNull();
    expect(supportedLine(linux('v22.23.3', '127', '2.37'))).toBeNull();
  });

  it('Node 20.12+ is kept on glibc 2.27+ (the legacy build); older Node 20 is not', () => {
    expect(supportedLine(linux('v20.20.2', '115', '2.36'))?.major).toBe(20);
    expect(supportedLine(linux('v20.12.0', '115', '2.27'))?.major).toBe(20);
    expect(supportedLine(linux('v20.11.1', '115', '2.36'))).toBeNull();
    expect(supportedLine(linux('v20.20.2', '115', '2.26'))).toBeNull();
  });

  it('refuses other lines, ABIs, C libraries and platforms', () => {
    expect(supportedLine(linux('v26.0.0', '147', '2.41'))).toBeNull(); // no uWS build for ABI 147 on the registry
    expect(supportedLine(linux('v25.2.0', '141', '2.41'))).toBeNull(); // not an LTS line
    expect(supportedLine(linux('v18.20.0', '108', '2.41'))).toBeNull();
    expect(supportedLine(linux('v24.21.0', '127', '2.41'))).toBeNull(); // version and ABI disagree
    expect(supportedLine(linux('v24.21.0', '137', null))).toBeNull(); // musl
    expect(supportedLine({ ...linux('v24.21.0', '137', '2.41'), arch: 'arm64' })).toBeNull();
    expect(supportedLine({ ...linux('v24.21.0', '137', '2.41'), platform: 'darwin' })).toBeNull();
  });

  it('the refusal is one line naming the Node version, ABI, glibc and what is supported', () => {
    const line = refusal(linux('v26.0.0', '147', '2.41'));
    expect(line).toBe(
      `hearth serve: unsupported runtime: Node.js v26.0.0 (ABI 147), glibc 2.41, linux x64; supported: ${SUPPORTED_TEXT}`,
    );
    expect(refusal(linux('v24.21.0', '137', null))).toContain('Node.js v24.21.0 (ABI 137), no glibc, linux x64');
    expect(refusal(linux('v24.21.0', '137', '2.41'), 'a\nb')).not.toMatch(/\n/);
  });

  it('this test process is supported, its build loads and is the one its glibc calls for', async () => {
    const r = currentRuntime();
    expect(supportedLine(r)).not.toBeNull();
    expect(await refuseUnsupportedRuntime(r)).toBeNull();
    const [maj = 0, min = 0] = (r.glibc ?? '0.0').split('.').map(Number);
    const newGlibc = maj > 2 || (maj === 2 && min >= 38);
    expect(uwsBuild).toBe(newGlibc ? 'btc-vision-20.57.0' : 'trufflesuite-20.30.0-node20');
  });

  it('hearth serve on an unsupported runtime exits 2 at once with that line, loading no model', () => {
    const res = spawnSync(
      process.execPath,
      [
        '--import',
        './test/fixtures/pretend-node-26.mjs',
        'bin/hearth.js',
        'serve',
        '--model',
        '/nonexistent.gguf',
        '--port',
        '0',
      ],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(res.status).toBe(2);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^hearth serve: unsupported runtime: Node\.js v26\.0\.0 \(ABI 147\), glibc \d+\.\d+, linux x64; supported: Node\.js 22 or 24/,
    );
    expect(res.stdout).toBe('');
  });
});
