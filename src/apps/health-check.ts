import net from 'node:net';
import type { ProcessExit } from './app-process.ts';

/** A free TCP port on 127.0.0.1 (the OS picks it; the app binds it moments later). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Polls `GET http://127.0.0.1:{port}{path}` until it answers 200 with JSON `{"ok":true}` (resolves null),
 * the process exits, or `timeoutMs` passes (resolves why, as a `health_check_failed: ...` reason).
 */
export async function awaitHealthy(
  port: number,
  healthPath: string,
  timeoutMs: number,
  exited: Promise<ProcessExit>,
): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  let exit: ProcessExit | null = null;
  void exited.then((e) => {
    exit = e;
  });
  let last = 'no answer yet';
  let delay = 50;
  while (Date.now() < deadline) {
    if (exit !== null) {
      const e = exit as ProcessExit;
      return `health_check_failed: the process exited (${e.error ?? (e.code !== null ? `code ${e.code}` : `signal ${e.signal}`)}) before ${healthPath} answered`;
    }
    try {
      const r = await fetch(`http://127.0.0.1:${port}${healthPath}`, {
        signal: AbortSignal.timeout(Math.max(100, Math.min(2000, deadline - Date.now()))),
      });
      const text = await r.text();
      if (r.status === 200) {
        try {
          if ((JSON.parse(text) as { ok?: unknown }).ok === true) return null;
        } catch {
          // not JSON
        }
        last = `200 without {"ok":true}: ${text.slice(0, 80)}`;
      } else last = `status ${r.status}`;
    } catch (err) {
      last = (err as Error).name === 'TimeoutError' ? 'no answer within 2 s' : 'connection refused';
    }
    await new Promise((res) => setTimeout(res, delay));
    delay = Math.min(250, delay * 2);
  }
  return `health_check_failed: GET ${healthPath} did not answer 200 {"ok":true} within ${Math.round(timeoutMs / 1000)} s (last: ${last})`;
}
