import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A bare repository served over git's "dumb" HTTP protocol on 127.0.0.1 (static files after
 * `git update-server-info`) at `/<name>/...`, counting the connections it accepts. `/moved/...` answers a 302 to
 * `/<name>/...`, for redirect tests. Owned by the test that starts it: close() it in afterAll.
 */
export interface DumbGitServer {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

export async function serveDumbGit(bare: string, name = path.basename(bare)): Promise<DumbGitServer> {
  execFileSync('git', ['update-server-info'], { cwd: bare, stdio: 'pipe' });
  let connections = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.startsWith('/moved/')) {
      res.writeHead(302, { location: url.pathname.replace('/moved/', `/${name}/`) + url.search }).end();
      return;
    }
    const prefix = `/${name}/`;
    const file = path.join(bare, path.normalize(`/${url.pathname.slice(prefix.length)}`));
    if (!url.pathname.startsWith(prefix) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200).end(fs.readFileSync(file));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
