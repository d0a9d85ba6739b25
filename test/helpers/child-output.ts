import type { ChildProcess } from 'node:child_process';

/**
 * What a child spawned with piped stdout and stderr writes to both, in arrival order, from this call on: answers
 * a reader of everything so far (for a readiness check, and for the error a failed start quotes). The listeners
 * live as long as the child's streams; call it before adding any other 'data' listener that reads the output.
 */
export function collectOutput(proc: ChildProcess): () => string {
  let output = '';
  const append = (d: Buffer) => {
    output += d.toString();
  };
  proc.stdout!.on('data', append);
  proc.stderr!.on('data', append);
  return () => output;
}
