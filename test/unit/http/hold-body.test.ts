import { createHash } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unauthorized } from '../../../src/errors/index.ts';
import type { Route } from '../../../src/http/router.ts';
import { parseResponses, rawWrites } from '../../helpers/raw-http.ts';
import { listenRoutes, patternBytes as payload } from '../../helpers/uws-routes.ts';

/**
 * HttpExchange.holdBody: a handler that must await something before it decides to read the body (the apps API
 * waiting for credentials made on another replica a moment ago) holds it, paused; what uWS already read is handed to
 * the reader attached later, in order, nothing lost or duplicated; an answer given instead drops the held body and
 * still reaches the client; a client that leaves meanwhile breaks nothing; the connection goes on to its next request.
 */
const HOLD_MS = 60;
let port: number;
let close: () => void;
let served = 0;

beforeAll(async () => {
  const routes: Route[] = [
    {
      method: 'POST',
      pattern: '/held/:verdict',
      name: 'held',
      body: { kind: 'handler' },
      handler: async (ex) => {
        ex.holdBody();
        await new Promise((r) => setTimeout(r, HOLD_MS));
        if (ex.params[0] === 'refuse') throw unauthorized();
        const body = await ex.readBody(8 << 20);
        served++;
        ex.sendJson(200, { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') });
      },
    },
    { method: 'GET', pattern: '/after', name: 'after', handler: (ex) => ex.sendJson(200, { after: true }) },
  ];
  ({ port, close } = await listenRoutes(routes));
});
afterAll(() => close());
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const head = (path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;

describe('HttpExchange.holdBody', () => {
  it('a body sent whole with its head reaches the reader attached after the hold, intact (64 KiB and 3 MiB)', async () => {
    for (const size of [65_536, 3 << 20]) {
      const body = payload(size);
      const r = await fetch(`http://127.0.0.1:${port}/held/read`, { method: 'POST', body });
      expect(await r.json()).toEqual({ bytes: size, sha256: sha(body) });
    }
  });

  it('a body sent in pieces before, during and after the hold arrives intact; the connection then serves its next request', async () => {
    const body = payload(300_000);
    const pieces = [
      head('/held/read', body.length),
      body.subarray(0, 1000),
      body.subarray(1000, 150_000),
      body.subarray(150_000),
    ];
    const r = await rawWrites(port, [...pieces, 'GET /after HTTP/1.1\r\nHost: x\r\n\r\n'], {
      expectResponses: 2,
      waitMs: 10_000,
    });
    expect(r.responses.map((x) => x.status)).toEqual([200, 200]);
    expect(JSON.parse(r.responses[0]!.body)).toEqual({ bytes: body.length, sha256: sha(body) });
    expect(JSON.parse(r.responses[1]!.body)).toEqual({ after: true });
  });

  it('chunked bodies too', async () => {
    const raw = 'POST /held/read HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n';
    const r = await rawWrites(port, [raw, '2\r\nde\r\n0\r\n\r\n'], { expectResponses: 1, waitMs: 10_000 });
    expect(JSON.parse(r.responses[0]!.body)).toEqual({ bytes: 5, sha256: sha(Buffer.from('abcde')) });
  });

  it('an answer instead of a read (401) drops the held body and reaches the client, not lost to a reset', async () => {
    const body = payload(1 << 20);
    for (let round = 0; round < 5; round++) {
      const r = await rawWrites(port, [Buffer.concat([Buffer.from(head('/held/refuse', body.length)), body])], {
        expectResponses: 1,
        waitMs: 10_000,
      });
      expect(
        r.responses.map((x) => x.status),
        `round ${round}`,
      ).toEqual([401]);
    }
  });

  it('a client that leaves while its body is held breaks nothing: the server answers the next client', async () => {
    const before = served;
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((r) => socket.on('connect', r));
    socket.write(head('/held/read', 100_000) + 'x'.repeat(5000));
    await new Promise((r) => setTimeout(r, HOLD_MS / 3));
    socket.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 2 * HOLD_MS));
    expect(served).toBe(before);
    const r = await rawWrites(port, ['GET /after HTTP/1.1\r\nHost: x\r\n\r\n'], { expectResponses: 1 });
    expect(parseResponses(r.text).map((x) => x.status)).toEqual([200]);
  });
});
