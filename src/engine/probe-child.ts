import { spawn } from 'node:child_process';

/**
 * Runs a probe (a worker/*-probe.ts behind its plain-JS entry that registers tsx) in a child process of this Node:
 * the request as JSON in argv[2], the answer as the last line of stdout with exit code 0. A child that exits
 * otherwise (an error it reports on stderr, or a crash such as SIGABRT in a native library) rejects with
 * "the <what> exited with <code or signal>: <the last two lines of stderr>". Killed by `signal` or after
 * `timeoutMs`. Used where a native library is process-wide or may abort the process: the CPU kernels and the GPU.
 */
export function runProbeChild<Req, Answer>(
  entry: URL,
  what: string,
  req: Req,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry.pathname, JSON.stringify(req)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
      ...(signal ? { signal } : {}),
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-64 * 1024)));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4096)));
    child.on('error', reject);
    child.on('close', (code, sig) => {
      if (code === 0) {
        try {
          return resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as Answer);
        } catch (e) {
          return reject(new Error(`unreadable ${what} answer: ${(e as Error).message}`));
        }
      }
      const tail = err
        .trim()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .slice(-2)
        .join(' | ');
      reject(new Error(`the ${what} exited with ${code ?? sig}${tail ? `: ${tail}` : ''}`));
    });
  });
}
