import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiError, invalidRequest } from '../../../src/errors/index.ts';
import type { EdgeStyle } from '../../../src/http/http-exchange.ts';
import type { Route } from '../../../src/http/router.ts';
import { rawExchange } from '../../helpers/raw-http.ts';
import { listenRoutes } from '../../helpers/uws-routes.ts';

/**
 * The one router on a bare uWS app, with an injected error style (as the tool-server kit injects its own):
 * guarded percent-decoding, bounds, the per-route body, HEAD, and unsafe requests that run only while their
 * connection is open.
 */
const STYLE: EdgeStyle = {
  jsonHeaders: [['content-type', 'application/json']],
  errorBody: (err: ApiError) => ({ oops: err.message, code: err.code }),
};
const ran: string[] = [];
let port: number;
let close: () => void;

beforeAll(async () => {
  const routes: Route[] = [
    { method: 'GET', pattern: '/items/:id', name: 'item', handler: (ex) => ex.sendJson(200, { id: ex.params[0] }) },
    {
      method: 'DELETE',
      pattern: '/items/:id',
      name: 'item',
      handler: (ex) => {
        ran.push(`delete ${ex.params[0]}`);
        ex.sendJson(200, { deleted: true });
      },
    },
    {
      method: 'POST',
      pattern: '/items',
      name: 'items',
      body: { kind: 'json', limit: 1024 },
      handler: async (ex) => {
        const body = (await ex.json()) as { name?: unknown } | undefined;
        if (typeof body?.name !== 'string')
          throw invalidRequest('name is required', 'name', 'missing_required_parameter');
        ran.push(`create ${body.name}`);
        ex.sendJson(201, { name: body.name });
      },
    },
    {
      method: 'GET',
      pattern: '/stream/*',
      name: 'stream',
      handler: (ex) => {
        for (const part of ['a', 'b', 'c']) ex.writeChunk(Buffer.from(part), 200, [['content-type', 'text/plain']]);
        ex.endStream();
      },
    },
    {
      method: 'PUT',
      pattern: '/upload',
      name: 'upload',
      body: { kind: 'handler' },
      handler: (ex) =>
        new Promise<void>((resolve) => {
          const chunks: Buffer[] = [];
          ex.streamBody((chunk, isLast) => {
            chunks.push(chunk);
            if (isLast) {
              ex.sendJson(200, { received: Buffer.concat(chunks).toString() });
              resolve();
            }
          });
        }),
    },
    {
      method: 'POST',
      pattern: '/raw',
      name: 'raw',
      body: { kind: 'raw', limit: 8 },
      handler: async (ex) => ex.sendJson(200, { bytes: (await ex.bytes()).length }),
    },
  ];
  ({ port, close } = await listenRoutes(routes, STYLE));
});
afterAll(() => close());

const url = (path: string) => `http://127.0.0.1:${port}${path}`;

describe('mountRoutes', () => {
  it('decodes parameters in the guarded path: a malformed escape is a 400 in the injected style', async () => {
    expect(await (await fetch(url('/items/caf%C3%A9'))).json()).toEqual({ id: 'café' });
    for (const bad of ['%E0', '%zz', '%', '%C0%AF', '%ED%A0%80']) {
      for (const method of ['GET', 'DELETE']) {
        const r = await fetch(url(`/items/${bad}`), { method });
        expect(r.status).toBe(400);
        expect(await r.json()).toEqual({
          oops: 'The request path is not valid percent-encoded UTF-8',
          code: 'invalid_path',
        });
      }
    }
    expect(ran).toEqual([]);
  });

  it('a parameter over 1,024 characters is a 404; 405 and 404 answer in the injected style', async () => {
    expect((await fetch(url(`/items/${'x'.repeat(1025)}`))).status).toBe(404);
    expect((await fetch(url(`/items/${'x'.repeat(1024)}`))).status).toBe(200);
    const wrong = await fetch(url('/items/1'), { method: 'PUT' });
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'GET, DELETE']);
    expect(await (await fetch(url('/nope'))).json()).toMatchObject({ code: 'route_not_found' });
  });

  it('hands the declared body to the handler: parsed JSON (depth-bounded) or bytes, 413 past the limit', async () => {
    const post = (path: string, body: string) =>
      fetch(url(path), { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect((await post('/items', '{"name":"a"}')).status).toBe(201);
    expect(await (await post('/items', '{"name":')).json()).toMatchObject({ code: 'invalid_json' });
    expect(await (await post('/items', `{"name":${'['.repeat(70)}${']'.repeat(70)}}`)).json()).toMatchObject({
      code: 'json_too_deep',
    });
    expect(await (await post('/raw', '1234')).json()).toEqual({ bytes: 4 });
    expect((await post('/raw', '123456789')).status).toBe(413);
  });

  it("a body the handler streams itself (kind 'handler') reaches it whole, chunked uploads included", async () => {
    const r = await fetch(url('/upload'), { method: 'PUT', body: 'x'.repeat(100_000) });
    expect(((await r.json()) as { received: string }).received.length).toBe(100_000);
    const chunked = await rawExchange(
      port,
      'PUT /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
      { expectResponses: 1 },
    );
    expect(JSON.parse(chunked.responses[0]!.body)).toEqual({ received: 'abcde' });
  });

  it('HEAD runs the GET route and sends no body', async () => {
    const r = await rawExchange(
      port,
      'HEAD /items/abc HTTP/1.1\r\nHost: x\r\n\r\nGET /items/def HTTP/1.1\r\nHost: x\r\n\r\n',
      { expectResponses: 2, headRequests: 1 },
    );
    expect(r.responses.map((x) => [x.status, x.body])).toEqual([
      [200, ''],
      [200, '{"id":"def"}'],
    ]);
    expect(r.responses[0]!.headers.get('content-length')).toBe(String('{"id":"abc"}'.length));
  });

  it('a streamed GET answers its chunks; under HEAD only its headers', async () => {
    expect(await (await fetch(url('/stream/any/tail'))).text()).toBe('abc');
    const r = await rawExchange(
      port,
      'HEAD /stream/x HTTP/1.1\r\nHost: x\r\n\r\nGET /items/after HTTP/1.1\r\nHost: x\r\n\r\n',
      { expectResponses: 2, headRequests: 1 },
    );
    expect(r.responses.map((x) => [x.status, x.headers.get('content-type'), x.body])).toEqual([
      [200, 'text/plain', ''],
      [200, 'application/json', '{"id":"after"}'],
    ]);
  });

  it('unsafe requests pipelined in one write run only if their connection is still open (uWS closes it: none run)', async () => {
    ran.length = 0;
    const create = (name: string) =>
      `POST /items HTTP/1.1\r\nHost: x\r\nContent-Length: ${11 + name.length}\r\n\r\n{"name":"${name}"}`;
    const r1 = await rawExchange(port, create('p1') + create('p2'), { waitMs: 2000 });
    const r2 = await rawExchange(
      port,
      'DELETE /items/1 HTTP/1.1\r\nHost: x\r\n\r\nDELETE /items/2 HTTP/1.1\r\nHost: x\r\n\r\n',
      { waitMs: 2000 },
    );
    expect([r1.closed, r1.responses, r2.closed, r2.responses]).toEqual([true, [], true, []]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ran).toEqual([]);
    // one at a time they run and answer
    const single = await rawExchange(port, create('s1'), { expectResponses: 1 });
    expect(single.responses[0]!.status).toBe(201);
    expect(ran).toEqual(['create s1']);
  });

  it('an answer decided while the body is still arriving (404, 405, a route without a body) is sent after it', async () => {
    // Each request's head goes out first, its body 200 ms later: the answer must come after the body (a server
    // that answers and closes with unread bytes resets the connection, which can destroy the answer), and the
    // process must survive a pending answer (uWS aborts a process whose handler leaves a response without one).
    const cases: Array<[string, number]> = [
      ['POST /nowhere HTTP/1.1', 404],
      ['PATCH /items HTTP/1.1', 405],
      ['GET /items/x HTTP/1.1', 200],
    ];
    for (const [line, status] of cases) {
      const body = 'x'.repeat(100);
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      let beforeBody = '';
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(`${line}\r\nHost: x\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 200));
      beforeBody = text;
      socket.write(body);
      await closed;
      expect(beforeBody, line).toBe('');
      expect(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), line).toBe(status);
    }
  });

  it('an answer waiting for a body that stops arriving goes out once it stalled, with connection: close; the rest is still read and dropped', async () => {
    // 10 of 100 declared bytes, then nothing: the 404 comes without the rest (after BODY_STALL_MS without a byte).
    for (const [line, status] of [
      ['POST /nowhere HTTP/1.1', 404],
      ['GET /items/x HTTP/1.1', 200],
    ] as const) {
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(`${line}\r\nHost: x\r\nContent-Length: 100\r\n\r\n${'x'.repeat(10)}`);
      while (!/\r\n\r\n\{.*\}$/s.test(text)) await new Promise((r) => setTimeout(r, 10));
      expect(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), line).toBe(status);
      expect(text.toLowerCase(), line).toContain('connection: close');
      socket.end('x'.repeat(90)); // the rest, late: read and dropped, then the close
      await closed;
    }
  });

  it('a body declared over the limit is refused 413 from the head alone, before any body byte, with connection: close (issue 23)', async () => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
    while (!text.includes('\r\n\r\n{')) await new Promise((r) => setTimeout(r, 10)); // the answer comes with no body sent
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(text).toContain('"code":"payload_too_large"');
    socket.end('x'.repeat(100)); // a client that sends the rest anyway: read and dropped, then the close
    await closed;
  });
});
