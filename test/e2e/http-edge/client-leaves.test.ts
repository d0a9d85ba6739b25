import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countsWithinBound,
  type Leave,
  type PendingClient,
  sendAndHold,
  untilCounts,
} from '../../helpers/abandoned-requests.ts';
import {
  expectServed,
  leavingRequest,
  NEVER_STOPS,
  nextChat,
  serveNeverStopping32k,
} from '../../helpers/clients-that-leave.ts';
import { postChat } from '../../helpers/chat-request.ts';
import { type HearthProcess } from '../../helpers/hearth-process.ts';

/**
 * Issue 36, contract "A client that leaves": a client that closes its connection, by FIN or by reset, streamed or
 * not, running or queued, frees its slot and its queue place within 1 s, behind the managed HAProxy front and with
 * uWS alone. Two slots and a queue of two, all four held by clients that then leave: first the queued ones (their
 * places free, the running two untouched), then the running ones; then a real request is served (it would be
 * refused 503 queue_full, or wait for generations of thousands of tokens, had any of them been kept).
 * Behind the front the FIN cases failed before the API backend kept `option abortonclose` (a non-streamed or
 * queued request whose client closed held its slot to its last token).
 * The model never stops by itself and its context is 32k tokens: only a cancel ends these generations in time.
 */
describe.each(['haproxy', 'off'] as const)('a client that leaves, --front %s', (front) => {
  let hearth: HearthProcess;

  beforeAll(async () => {
    hearth = await serveNeverStopping32k({ 'queue-limit': 2, front });
    expect(/"msg":"listening".*"front":"haproxy"/.test(hearth.logs())).toBe(front === 'haproxy');
  }, 60_000);

  afterAll(() => hearth?.stop());

  const cases: Array<[Leave, boolean]> = [
    ['fin', false],
    ['fin', true],
    ['reset', false],
    ['reset', true],
  ];
  it.each(cases)(
    'leaving by %s (streamed: %s): queued requests free their places, running ones their slots, within 1 s',
    async (how, stream) => {
      const raw = leavingRequest(hearth.key, stream);
      const running: PendingClient[] = [];
      const queued: PendingClient[] = [];
      for (let i = 0; i < 2; i++) running.push(await sendAndHold(hearth.port, raw));
      await untilCounts(hearth.baseUrl, (c) => c.running === 2, 'two generations running');
      for (let i = 0; i < 2; i++) queued.push(await sendAndHold(hearth.port, raw));
      await untilCounts(hearth.baseUrl, (c) => c.running === 2 && c.waiting === 2, 'two requests queued');

      let leftAt = Date.now();
      await Promise.all(queued.map((c) => c.leave(how)));
      expect(
        await countsWithinBound(hearth.baseUrl, leftAt, (c) => c.waiting === 0),
        'the queue, 1 s after its clients left',
      ).toEqual({ running: 2, waiting: 0 });

      leftAt = Date.now();
      await Promise.all(running.map((c) => c.leave(how)));
      expect(
        await countsWithinBound(hearth.baseUrl, leftAt, (c) => c.running === 0 && c.waiting === 0),
        'the slots, 1 s after their clients left',
      ).toEqual({ running: 0, waiting: 0 });
      await expectServed(await nextChat(hearth));
    },
    60_000,
  );

  it('every slot and queue place held by clients that then close (FIN): all free within 1 s, and the next request is served, not refused 503', async () => {
    // The shape: slots and queue taken by requests whose clients close (a plain close) once they are in.
    const raw = leavingRequest(hearth.key);
    const clients = await Promise.all(Array.from({ length: 4 }, () => sendAndHold(hearth.port, raw)));
    await untilCounts(hearth.baseUrl, (c) => c.running === 2 && c.waiting === 2, 'slots and queue full');
    const refused = await postChat(hearth, {
      model: NEVER_STOPS,
      messages: [{ role: 'user', content: 'one more' }],
      max_tokens: 2,
    });
    expect(refused.status).toBe(503); // the queue is full: what an abandoned queue would do to every next request
    await refused.body?.cancel();
    const leftAt = Date.now();
    await Promise.all(clients.map((c) => c.leave('fin')));
    expect(await countsWithinBound(hearth.baseUrl, leftAt, (c) => c.running === 0 && c.waiting === 0)).toEqual({
      running: 0,
      waiting: 0,
    });
    await expectServed(await nextChat(hearth));
  }, 60_000);
});
