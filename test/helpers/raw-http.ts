import net from 'node:net';

/** What one raw TCP exchange with a server saw. */
export interface RawResult {
  /** Every byte received, as latin1 text (bytes preserved). */
  text: string;
  /** Whether the server closed (or reset) the connection before `waitMs` ran out. */
  closed: boolean;
  responses: RawResponse[];
  /** How many `data` events (reads) the socket delivered, and the first one's bytes (latin1). */
  reads: number;
  firstRead: string;
}

export interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/**
 * Writes `request` (all at once) to a fresh connection and collects what comes back until the server closes
 * or `waitMs` passes (or, with `expectResponses`, as soon as that many complete responses arrived; with `until`, as
 * soon as it holds for the bytes so far). `localAddress` picks the client's address (e.g. 127.0.0.2).
 * `headRequests`: how many of the first answers are to HEAD requests (they carry no body).
 */
export function rawExchange(
  port: number,
  request: string | Buffer,
  o: {
    waitMs?: number;
    expectResponses?: number;
    headRequests?: number;
    until?: (text: string) => boolean;
    localAddress?: string;
  } = {},
): Promise<RawResult> {
  const socket = net.connect({ port, host: '127.0.0.1', ...(o.localAddress ? { localAddress: o.localAddress } : {}) });
  const enough = (text: string) =>
    (o.expectResponses !== undefined && parseResponses(text, o.headRequests).length >= o.expectResponses) ||
    o.until?.(text) === true;
  const result = collect(socket, { waitMs: o.waitMs ?? 3000, enough, headRequests: o.headRequests });
  socket.write(request);
  return result;
}

/**
 * Like rawExchange, with the test in charge of the writes: each entry of `writes` is written separately (20 ms
 * apart, so the server reads them separately), then, with `halfClose`, the write side is shut (FIN) while the
 * read side stays open. Resolves when `expectResponses` answers arrived, the server closed, or `waitMs` passed.
 */
export function rawWrites(
  port: number,
  writes: ReadonlyArray<string | Buffer>,
  o: { halfClose?: boolean; waitMs?: number; expectResponses?: number } = {},
): Promise<RawResult> {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const enough = (text: string) => o.expectResponses !== undefined && parseResponses(text).length >= o.expectResponses;
  const result = collect(socket, { waitMs: o.waitMs ?? 10_000, enough, endCloses: true });
  socket.on('connect', async () => {
    for (const [i, w] of writes.entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, 20));
      if (!socket.destroyed) socket.write(w);
    }
    if (o.halfClose && !socket.destroyed) socket.end();
  });
  return result;
}

/**
 * What `socket` receives, until the server closes it (or ends its side, with `endCloses`), `waitMs` passes,
 * or `enough` holds for the bytes so far. `headRequests` as for rawExchange.
 */
function collect(
  socket: net.Socket,
  o: { waitMs: number; enough: (text: string) => boolean; headRequests?: number; endCloses?: boolean },
): Promise<RawResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({
        text,
        closed,
        responses: parseResponses(text, o.headRequests),
        reads: chunks.length,
        firstRead: chunks[0]?.toString('latin1') ?? '',
      });
    };
    const timer = setTimeout(() => finish(false), o.waitMs);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (o.enough(Buffer.concat(chunks).toString('latin1'))) finish(false);
    });
    if (o.endCloses) socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
  });
}

/** Splits a byte stream into HTTP/1.1 responses (Content-Length or chunked bodies; HEAD answers have none). */
export function parseResponses(text: string, headRequests = 0): RawResponse[] {
  const out: RawResponse[] = [];
  let at = 0;
  let heads = headRequests;
  while (at < text.length) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const lines = text.slice(at, end).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '')?.[1]);
    if (!Number.isFinite(status)) break;
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
    }
    let bodyStart = end + 4;
    let body = '';
    if (status < 200) {
      // interim answers have no body
    } else if (heads > 0) {
      heads--;
    } else if (headers.get('transfer-encoding') === 'chunked') {
      for (;;) {
        const lineEnd = text.indexOf('\r\n', bodyStart);
        if (lineEnd === -1) return out;
        const size = parseInt(text.slice(bodyStart, lineEnd), 16);
        bodyStart = lineEnd + 2;
        if (size === 0) {
          bodyStart += 2;
          break;
        }
        body += text.slice(bodyStart, bodyStart + size);
        bodyStart += size + 2;
      }
    } else {
      const length = Number(headers.get('content-length') ?? '0');
      if (bodyStart + length > text.length) break;
      body = text.slice(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    at = bodyStart;
    if (status >= 100 && status < 200) continue; // interim (100 Continue): the real answer follows
    out.push({ status, headers, body });
  }
  return out;
}

/**
 * Whether `res` is one of HAProxy 2.6's built-in answers (a short HTML body: 400 for syntax, 408 for a request
 * head not finished in time, 422 / 501 for a transfer coding it refuses ...), which its HTTP/1 parser sends for
 * errors found before a request exists, ignoring the front's JSON errorfiles (docs/http-front.md). Every other
 * answer, the front's own included, is in Hearth's documented shape.
 */
export function isFrontParserAnswer(res: RawResponse): boolean {
  return res.headers.get('content-type') === 'text/html' && res.body.startsWith(`<html><body><h1>${res.status} `);
}
