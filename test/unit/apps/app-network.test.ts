import { describe, expect, it } from 'vitest';
import { apiUnreachableReason, hearthApiUrl } from '../../../src/apps/app-network.ts';
import { isolatesNetwork, launchPlan } from '../../../src/apps/sandbox.ts';
import { testSandbox } from '../../helpers/sandbox-options.ts';

const base = testSandbox('bwrap', 'isolated');

describe('HEARTH_API_URL', () => {
  it("is the namespace's loopback on the public port when isolated, whatever Hearth listens on", () => {
    expect(hearthApiUrl('isolated', '0.0.0.0', 8080)).toBe('http://127.0.0.1:8080');
    expect(hearthApiUrl('isolated', '127.0.0.1', 9000)).toBe('http://127.0.0.1:9000');
  });

  it('is the listening address with the host network (loopback for a wildcard, brackets for IPv6)', () => {
    expect(hearthApiUrl('host', '0.0.0.0', 8080)).toBe('http://127.0.0.1:8080');
    expect(hearthApiUrl('host', '::', 8080)).toBe('http://[::1]:8080');
    expect(hearthApiUrl('host', '10.1.2.3', 8080)).toBe('http://10.1.2.3:8080');
    expect(hearthApiUrl('host', 'fd00::5', 8080)).toBe('http://[fd00::5]:8080');
  });

  it("warns when an isolated app cannot reach it: Hearth not on the host's 127.0.0.1", () => {
    for (const ok of ['127.0.0.1', '0.0.0.0', '::', 'localhost'])
      expect(apiUnreachableReason('isolated', ok)).toBeNull();
    expect(apiUnreachableReason('isolated', '10.1.2.3')).toMatch(/listens on 10\.1\.2\.3 only/);
    expect(apiUnreachableReason('host', '10.1.2.3')).toBeNull();
  });
});

describe('which launches are isolated', () => {
  it('bwrap with isolated networking only; --app-sandbox none shares everything', () => {
    expect(isolatesNetwork(base)).toBe(true);
    expect(isolatesNetwork({ ...base, network: { mode: 'host', pastaPath: 'pasta' } })).toBe(false);
    expect(isolatesNetwork({ ...base, mode: 'none' })).toBe(false);
  });

  it('a plan inside a namespace enters it with nsenter before bwrap; without one bwrap runs directly', () => {
    const net = {
      wrap: (command: string, args: string[]) => ({
        command: '/usr/bin/nsenter',
        args: ['--net=/run/netns/hearth-1-1', '--', command, ...args],
      }),
    };
    const inside = launchPlan(base, '/tmp/app', 'node server.js', {}, net as never);
    expect(inside.command).toBe('/usr/bin/nsenter');
    expect(inside.args.slice(0, 3)).toEqual(['--net=/run/netns/hearth-1-1', '--', 'bwrap']);
    const outside = launchPlan(base, '/tmp/app', 'node server.js', {});
    expect(outside.command).toBe('bwrap');
    expect(outside.args.slice(1)).toEqual(inside.args.slice(3).slice(1));
  });
});
