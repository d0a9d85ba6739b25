import type { HearthProcess } from './hearth-process.ts';

/**
 * The management API as an e2e test calls it: the process's Bearer key, a JSON body (a Buffer or a string
 * goes as it is, with `contentType`), every call bounded by `timeoutMs`; and a poll that names what it waited
 * for, with the server's last log lines, when it gives up. `hearth` is read at each call (set in beforeAll).
 */
export function managementClient(hearth: () => HearthProcess, timeoutMs: number) {
  async function api<T>(method: string, url: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: T }> {
    const h = hearth();
    const r = await fetch(`${h.baseUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${h.key}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      body: body === undefined ? undefined : Buffer.isBuffer(body) || typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await r.text();
    return { status: r.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** Polls `check` every 150 ms, at most 300 times. */
  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`timed out waiting for ${what}\n${hearth().logs().split('\n').slice(-30).join('\n')}`);
  }

  return { api, until };
}
