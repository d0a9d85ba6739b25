import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, createUser } from '../../helpers/hearth-process.ts';
import { rawExchange } from '../../helpers/raw-http.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * Header values with bytes >= 0x80, over raw sockets, against `hearth serve` as shipped (the HAProxy front) and
 * with `--front off` (uWS alone). uWS v20.30 drops such bytes at either end of a value, as it drops spaces
 * (measured: "Bearer <key>\xC3\xA9" reaches Hearth as "Bearer <key>", and both getHeader and forEach give the
 * shortened value): a valid key, session cookie or Origin followed by such bytes was accepted, and a value with
 * them inside was acted on as uWS decoded it. The front now refuses every header value holding a byte >= 0x80;
 * Hearth refuses the values it sees holding one (those inside). Either way: 400 invalid_header_value in the
 * documented shape, nothing done.
 */
const servers: Record<'haproxy' | 'off', HearthProcess> = {} as Record<'haproxy' | 'off', HearthProcess>;
const cookies: Record<string, string> = {};
const OWNER = { email: 'owner@example.com', password: 'owner password 1' };

beforeAll(async () => {
  for (const front of ['haproxy', 'off'] as const) {
    const h = await startHearthProcess({
      args: ['--model', await tinyModel(), '--engine', 'instant', '--front', front],
    });
    servers[front] = h;
    const created = createUser(h.dataDir, OWNER);
    expect(created.status, created.stderr).toBe(0);
    await h.waitReady();
    const r = await fetch(`${h.baseUrl}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: h.baseUrl },
      body: JSON.stringify(OWNER),
      signal: AbortSignal.timeout(20_000),
    });
    expect(r.status).toBe(204);
    cookies[front] = r.headers
      .getSetCookie()
      .find((c) => c.startsWith('hearth_session='))!
      .split(';')[0]!;
  }
}, 120_000);

afterAll(async () => {
  for (const h of Object.values(servers)) await h?.stop();
});

const bytes = (...parts: Array<string | number[] | Buffer>) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const E_ACUTE = [0xc3, 0xa9];
const NBSP = [0xc2, 0xa0];

async function exchange(h: HearthProcess, request: Buffer): Promise<{ status: number; body: unknown }> {
  const r = await rawExchange(h.port, request, { expectResponses: 1, waitMs: 10_000 });
  expect(r.responses, r.text).toHaveLength(1);
  const res = r.responses[0]!;
  return { status: res.status, body: res.body === '' ? null : JSON.parse(res.body) };
}

/** GET /api/v1/workspaces with `headers` (CRLF-separated lines) on a fresh connection. */
const list = (h: HearthProcess, headers: Buffer) =>
  exchange(
    h,
    bytes(`GET /api/v1/workspaces HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\n`, headers, '\r\nConnection: close\r\n\r\n'),
  );
/** POST /api/v1/workspaces {"name":"made"} with `headers`. */
const create = (h: HearthProcess, headers: Buffer) =>
  exchange(
    h,
    bytes(
      `POST /api/v1/workspaces HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nContent-Type: application/json\r\nContent-Length: 15\r\n`,
      headers,
      '\r\nConnection: close\r\n\r\n{"name":"made"}',
    ),
  );

const REFUSED = {
  status: 400,
  body: {
    error: {
      message: expect.stringMatching(/ASCII/),
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_header_value',
    },
  },
};

/** The workspaces of the account, read with the API key. */
async function workspaceNames(h: HearthProcess): Promise<string[]> {
  const r = await fetch(`${h.baseUrl}/api/v1/workspaces`, {
    headers: { authorization: `Bearer ${h.key}` },
    signal: AbortSignal.timeout(10_000),
  });
  return ((await r.json()) as { data: Array<{ name: string }> }).data.map((w) => w.name);
}

describe.each(['haproxy', 'off'] as const)('front %s', (front) => {
  it('the credentials alone work (the baseline)', async () => {
    const h = servers[front];
    expect((await list(h, bytes(`Authorization: Bearer ${h.key}`))).status).toBe(200);
    expect((await list(h, bytes(`Cookie: ${cookies[front]}`))).status).toBe(200);
  });

  it('a byte >= 0x80 inside a value: 400 invalid_header_value, whichever header', async () => {
    const h = servers[front];
    const cases = [
      bytes(`Authorization: Bearer ${h.key.slice(0, 10)}`, E_ACUTE, h.key.slice(10)),
      bytes(`Authorization: Bearer ${h.key}`, E_ACUTE, 'junk'),
      bytes(`Cookie: ${cookies[front]}`, NBSP, '; theme=dark'),
      bytes(`Authorization: Bearer ${h.key}\r\nX-Client-Note: caf`, E_ACUTE, ' au lait'),
      bytes(`Authorization: Bearer ${h.key}\r\nX-Forwarded-For: 10.0.0.1`, [0x80], '0'),
    ];
    for (const headers of cases) expect(await list(h, headers), headers.toString('latin1')).toEqual(REFUSED);
  });

  it('a change made with a cookie and an Origin holding such a byte does not happen', async () => {
    const h = servers[front];
    const origin = `Origin: http://127.0.0.1:${h.port}`;
    expect(
      await create(h, bytes(`Cookie: ${cookies[front]}\r\n${origin.slice(0, 12)}`, E_ACUTE, origin.slice(12))),
    ).toEqual(REFUSED);
    expect(await workspaceNames(h)).toEqual([]);
  });
});

describe('front haproxy (hearth serve as shipped)', () => {
  it('bytes >= 0x80 at either end of a value, which uWS would drop, are refused before Hearth acts: key, cookie, Origin, Content-Type, X-Forwarded-Proto', async () => {
    const h = servers.haproxy;
    const origin = `Origin: http://127.0.0.1:${h.port}`;
    const cases = [
      bytes(`Authorization: Bearer ${h.key}`, E_ACUTE),
      bytes(`Authorization: Bearer ${h.key}`, [0x80]),
      bytes(`Authorization: Bearer ${h.key}`, [0xff]),
      bytes(`Authorization: Bearer ${h.key}`, NBSP),
      bytes('Authorization: ', E_ACUTE, `Bearer ${h.key}`),
      bytes(`Cookie: ${cookies.haproxy}`, E_ACUTE),
      bytes(`Authorization: Bearer ${h.key}\r\nX-Forwarded-Proto: https`, NBSP),
    ];
    for (const headers of cases) expect(await list(h, headers), headers.toString('latin1')).toEqual(REFUSED);
    expect(await create(h, bytes(`Cookie: ${cookies.haproxy}\r\n${origin}`, E_ACUTE))).toEqual(REFUSED);
    expect(
      await exchange(
        h,
        bytes(
          `POST /api/v1/workspaces HTTP/1.1\r\nHost: 127.0.0.1:${h.port}\r\nAuthorization: Bearer ${h.key}\r\nContent-Type: application/json`,
          E_ACUTE,
          '\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"name":"made"}',
        ),
      ),
    ).toEqual(REFUSED);
    expect(await workspaceNames(h)).toEqual([]);
  });
});

describe('front off (uWS alone): the limit that stays (README "Limits")', () => {
  it('bytes >= 0x80 at either end of a value never reach Hearth: the request is answered as if they were not sent', async () => {
    // Measured, not wanted: uWS v20.30 gives no way to see them. Should a uWS update keep them, this test fails
    // and the README's "Without the front" paragraph must change with it.
    const h = servers.off;
    expect((await list(h, bytes(`Authorization: Bearer ${h.key}`, E_ACUTE))).status).toBe(200);
    expect((await list(h, bytes(`Cookie: ${cookies.off}`, [0xff]))).status).toBe(200);
  });
});
