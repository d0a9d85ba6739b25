import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../../src/http/http-server.ts';
import type { Route } from '../../../src/http/router.ts';
import { rawExchange } from '../../helpers/raw-http.ts';
import { appBehindProxy } from '../../helpers/unit-app-proxy.ts';
import { startLoopbackServer } from '../../helpers/uws-routes.ts';

/**
 * Header values with bytes >= 0x80, sent over a raw socket to uWS alone (no front). uWS v20.30 drops such bytes
 * at either end of a value (as it does spaces) and hands those in the middle on decoded as UTF-8 (U+FFFD for a
 * byte that is not), so Hearth would act on a value other than the one sent: a route that reads headers saw the
 * changed value, the app proxy forwarded é (UTF-8 C3 A9) to the app as the one byte E9, and answered 500
 * internal_error for a lone 0x80 or a euro sign (characters Node cannot write into a header).
 * The router now refuses a request whose header value it sees holding anything but ASCII text: 400
 * invalid_header_value, before any handler runs. (The bytes at either end never reach Hearth: the front
 * refuses those, test/e2e/http-edge/header-bytes.test.ts.)
 */
let upstream: http.Server;
let upstreamCalls = 0;
let server: RunningHttpServer;
let handlerCalls = 0;

const echo: Route = {
  method: 'GET',
  pattern: '/echo',
  name: 'echo',
  handler: (ex) => {
    handlerCalls++;
    ex.sendJson(200, { authorization: ex.authorization, custom: ex.header('x-custom') });
  },
};

beforeAll(async () => {
  const proxy = await appBehindProxy((_req, res) => {
    upstreamCalls++;
    res.end('{"ok":true}');
  });
  upstream = proxy.app;
  server = await startLoopbackServer([echo, ...proxy.routes]);
});
afterAll(async () => {
  server?.close();
  await server?.closeConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const bytes = (...parts: Array<string | number[] | Buffer>) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

async function send(path: string, header: Buffer) {
  const r = await rawExchange(
    server.port,
    bytes(`GET ${path} HTTP/1.1\r\nHost: x\r\n`, header, '\r\nConnection: close\r\n\r\n'),
    { expectResponses: 1, waitMs: 5000 },
  );
  expect(r.responses, r.text).toHaveLength(1);
  const res = r.responses[0]!;
  return { status: res.status, body: JSON.parse(res.body) as Record<string, unknown> };
}

const REFUSED = {
  error: {
    message: expect.stringMatching(/ASCII/),
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_header_value',
  },
};

describe('header values with bytes >= 0x80 (uWS alone)', () => {
  const inside: Array<[string, Buffer]> = [
    ['UTF-8 é inside the Authorization value', bytes('Authorization: Bearer hk_abc_', [0xc3, 0xa9], 'def')],
    ['a lone 0x80 inside a custom value', bytes('X-Custom: a', [0x80], 'b')],
    ['a UTF-8 no-break space inside the value', bytes('X-Custom: a', [0xc2, 0xa0], 'b')],
    ['a UTF-8 euro sign inside the value', bytes('X-Custom: a', [0xe2, 0x82, 0xac], 'b')],
  ];

  it.each(inside)('%s: 400 invalid_header_value, no handler runs', async (_name, header) => {
    handlerCalls = 0;
    expect(await send('/echo', header)).toEqual({ status: 400, body: REFUSED });
    expect(handlerCalls).toBe(0);
  });

  it('the app proxy refuses such a request (it was a 500), and the app is never called', async () => {
    upstreamCalls = 0;
    for (const [, header] of inside)
      expect(await send('/apps/app_1/page', header)).toEqual({ status: 400, body: REFUSED });
    expect(upstreamCalls).toBe(0);
  });

  it('ASCII values, tabs and spaces inside them, pass as sent', async () => {
    const r = await send('/echo', bytes('Authorization: Bearer hk_abc_def\r\nX-Custom: a\tb c~'));
    expect(r).toEqual({ status: 200, body: { authorization: 'Bearer hk_abc_def', custom: 'a\tb c~' } });
    upstreamCalls = 0;
    expect((await send('/apps/app_1/page', bytes('X-Custom: plain'))).status).toBe(200);
    expect(upstreamCalls).toBe(1);
  });
});
