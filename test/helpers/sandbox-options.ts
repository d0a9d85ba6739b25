import type { SandboxOptions } from '../../src/apps/sandbox.ts';

/** The sandbox of an app unit test: `mode` (bwrap or none), 1 GiB, 256 processes and open files, the host's network unless `network` says otherwise. */
export function testSandbox(
  mode: SandboxOptions['mode'],
  network: SandboxOptions['network']['mode'] = 'host',
): SandboxOptions {
  return {
    mode,
    bwrapPath: 'bwrap',
    memoryBytes: 1 << 30,
    maxProcesses: 256,
    maxOpenFiles: 256,
    network: { mode: network, pastaPath: 'pasta' },
  };
}
