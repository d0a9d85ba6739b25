import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeModelHub {
  /** Use as HF_ENDPOINT (ends with a slash). */
  endpoint: string;
  /** Paths requested so far (method + url). */
  requests: string[];
  /** Lets the held part of the download through. */
  release(): void;
  close(): Promise<void>;
}

/**
 * A local stand-in for the Hugging Face hub's file route (`/<user>/<repo>/resolve/<rev>/<file>`), serving one
 * GGUF file with HEAD, ranges and content-length like the real one. It sends the first `heldAfterBytes`
 * bytes at once and holds the rest until `release()`, so a test can observe the pull in progress.
 * `mode: 'missing'` answers 404 for everything (an unknown repo).
 */
export async function startFakeModelHub(o: {
  filePath: string;
  heldAfterBytes?: number;
  mode?: 'serve' | 'missing';
}): Promise<FakeModelHub> {
  const data = fs.readFileSync(o.filePath);
  const held = Math.min(o.heldAfterBytes ?? data.length, data.length);
  const requests: string[] = [];
  let released = held >= data.length;
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (o.mode === 'missing' || !/\/resolve\/[^/]+\/.+\.gguf/.test(req.url ?? '')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Repository not found' }));
      return;
    }
    let start = 0;
    let end = data.length - 1;
    const range = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
    if (range) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]), end) : end;
    }
    const headers = {
      'content-type': 'application/octet-stream',
      'accept-ranges': 'bytes',
      'content-length': String(end - start + 1),
      etag: '"fake-etag"',
    };
    if (range) res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${data.length}` });
    else res.writeHead(200, headers);
    if (req.method === 'HEAD') return res.end();
    const firstEnd = Math.min(end + 1, Math.max(start, held));
    res.write(data.subarray(start, firstEnd));
    const rest = () => res.end(data.subarray(firstEnd, end + 1));
    if (released || firstEnd > end) rest();
    else waiters.push(rest);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/`,
    requests,
    release() {
      released = true;
      for (const w of waiters.splice(0)) w();
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
