import { type ChildProcess, execFileSync, spawn } from 'node:child_process';

/**
 * A network namespace the test makes for itself (root only), joined to the host by a veth pair: the host side
 * gets `hostAddress/24`, the namespace side `nsAddress/24`, so the host routes that /24 to it and nothing ever
 * leaves this machine. `serve` runs a TCP server inside that answers every connection with `reply` and closes.
 * `remove()` stops the server and deletes the namespace (the veth pair goes with it).
 */
export interface TestNamespace {
  name: string;
  nsAddress: string;
  remove(): Promise<void>;
}

let sequence = 0;
const IP =
  ['/usr/sbin/ip', '/sbin/ip'].find((p) => {
    try {
      execFileSync(p, ['-V'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  }) ?? 'ip';

const ip = (...args: string[]) => execFileSync(IP, args, { stdio: 'pipe' });

export async function namespaceWithServer(
  hostAddress: string,
  nsAddress: string,
  port: number,
  reply: string,
): Promise<TestNamespace> {
  const n = ++sequence;
  const name = `hearth-test-${process.pid}-${n}`;
  const hostIf = `htv${process.pid % 100_000}${n}h`;
  const nsIf = `htv${process.pid % 100_000}${n}n`;
  ip('netns', 'add', name);
  let server: ChildProcess | null = null;
  const remove = async () => {
    server?.kill('SIGKILL');
    try {
      ip('link', 'delete', hostIf);
    } catch {
      /* gone with the namespace */
    }
    try {
      ip('netns', 'delete', name);
    } catch {
      /* already gone */
    }
  };
  try {
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf, 'netns', name);
    ip('addr', 'add', `${hostAddress}/24`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('-n', name, 'addr', 'add', `${nsAddress}/24`, 'dev', nsIf);
    ip('-n', name, 'link', 'set', nsIf, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
    const code = `require('node:net').createServer((s) => s.end(${JSON.stringify(reply)})).listen(${port}, ${JSON.stringify(nsAddress)}, () => console.log('ready'))`;
    server = spawn(IP, ['netns', 'exec', name, process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server in ${name} did not start`)), 10_000);
      server!.stdout!.on('data', (d: Buffer) => {
        if (String(d).includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      server!.once('exit', (c) => {
        clearTimeout(timer);
        reject(new Error(`the server in ${name} exited (${c})`));
      });
    });
  } catch (err) {
    await remove();
    throw err;
  }
  return { name, nsAddress, remove };
}

/** Whether this process may make network namespaces (root with iproute2). */
export function canMakeNamespaces(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0 && IP !== 'ip';
}
