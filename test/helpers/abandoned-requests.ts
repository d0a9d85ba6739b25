import net from 'node:net';

/**
 * Clients that leave (contract "A client that leaves"): raw connections that send one chat request each and then
 * close, by FIN or by reset, and the check that their slots and queue places are free within the contract's bound.
 * Used by test/e2e/http-edge/client-leaves.test.ts and test/fuzz/client-leaves.test.ts, against a `hearth serve` child.
 */

/** How a client leaves: `fin` closes its socket (a FIN, no reset from the client), `reset` aborts it (RST). */
export type Leave = 'fin' | 'reset';

/** The contract's bound: a client that leaves frees its slot and queue place within 1 s. */
export const FREED_WITHIN_MS = 1_000;

export interface RequestCounts {
  running: number;
  waiting: number;
}

/** /health's `requests` (the scheduler's counts). */
export async function requestCounts(baseUrl: string): Promise<RequestCounts> {
  const body = (await (await fetch(`${baseUrl}/health`)).json()) as { requests: RequestCounts };
  return body.requests;
}

/** Polls /health every 50 ms until `done` holds, or throws after `timeoutMs` naming `what` and the last counts. */
export async function untilCounts(
  baseUrl: string,
  done: (c: RequestCounts) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<RequestCounts> {
  const deadline = Date.now() + timeoutMs;
  let last: RequestCounts = await requestCounts(baseUrl);
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
    last = await requestCounts(baseUrl);
  }
  return last;
}

/**
 * After clients left at `leftAt` (Date.now()): the counts as the first /health request sent within FREED_WITHIN_MS of
 * it saw them once they reached `target`, else the counts its last such request saw. A poll sent inside the bound
 * counts whenever its answer comes (the machine may be busy); nothing else about time is asserted.
 */
export async function countsWithinBound(
  baseUrl: string,
  leftAt: number,
  target: (c: RequestCounts) => boolean,
): Promise<RequestCounts> {
  let last = await requestCounts(baseUrl);
  while (!target(last)) {
    await new Promise((r) => setTimeout(r, 25));
    if (Date.now() - leftAt > FREED_WITHIN_MS) break; // this poll would be sent past the bound
    last = await requestCounts(baseUrl);
  }
  return last;
}

/** An open client connection with its request sent; `leave` ends it the chosen way, once. */
export interface PendingClient {
  socket: net.Socket;
  leave(how: Leave): Promise<void>;
}

/**
 * Connects to `port`, sends `raw` (one whole HTTP request) and resolves once it is written. Whatever the server
 * sends is read and dropped (a streamed answer's events), so a FIN leaves no unread bytes behind that would turn
 * the close into a reset.
 */
export async function sendAndHold(port: number, raw: string): Promise<PendingClient> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.on('error', () => {}); // a reset after leaving is expected
  socket.on('data', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  await new Promise<void>((resolve) => socket.write(raw, () => resolve()));
  let left: Promise<void> | undefined;
  return {
    socket,
    leave(how) {
      left ??= new Promise<void>((resolve) => {
        if (how === 'reset') {
          socket.resetAndDestroy();
          resolve();
          return;
        }
        // FIN: shut the write side, then close the socket once the FIN is out (a client that closes, not one that
        // half-closes and keeps reading: what it is sent next is answered by its kernel with a reset).
        socket.end(() => {
          socket.destroy();
          resolve();
        });
      });
      return left;
    },
  };
}

/** One chat completions request as raw HTTP/1.1, for `sendAndHold`. */
export function rawChatRequest(key: string, body: Record<string, unknown>): string {
  const json = JSON.stringify(body);
  return `POST /api/inference/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}
