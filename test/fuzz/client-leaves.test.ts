import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countsWithinBound,
  type Leave,
  type PendingClient,
  sendAndHold,
  untilCounts,
} from '../helpers/abandoned-requests.ts';
import { expectServed, leavingRequest, nextChat, serveNeverStopping32k } from '../helpers/clients-that-leave.ts';
import { type HearthProcess } from '../helpers/hearth-process.ts';

/**
 * Hostile clients that leave (issue 36, contract "A client that leaves") against the real CLI server, as shipped
 * (`--front auto`: behind its managed HAProxy front where HAProxy is installed) and with uWS alone: whatever mix of
 * streamed and non-streamed requests, running or queued, whose clients close (FIN) or reset, early or late, every
 * slot and queue place is free within 1 s of the last one leaving (a /health poll sent within that second sees
 * it), and the next real request is served. Four slots and a queue of eight; the model never stops by itself and
 * its context is 32k tokens, so only a cancel frees a slot in time. Fixed seed, bounded runs.
 */
const SLOTS = 4;
const QUEUE = 8;
const SEED = 0x36c1ea5;

describe.each(['auto', 'off'] as const)('clients that leave (fast-check, fixed seed), --front %s', (front) => {
  let hearth: HearthProcess;
  const request = (stream: boolean) => leavingRequest(hearth.key, stream);
  const freed = (c: { running: number; waiting: number }) => c.running === 0 && c.waiting === 0;

  beforeAll(async () => {
    hearth = await serveNeverStopping32k({ slots: SLOTS, 'queue-limit': QUEUE, front });
  }, 60_000);

  afterAll(() => hearth?.stop());

  it('8 non-streaming clients disconnect mid-generation: slots freed within 1 s', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => sendAndHold(hearth.port, request(false))));
    await untilCounts(hearth.baseUrl, (c) => c.running === SLOTS && c.waiting === 8 - SLOTS, 'all eight admitted');
    const leftAt = Date.now();
    await Promise.all(clients.map((c) => c.leave('fin')));
    expect(await countsWithinBound(hearth.baseUrl, leftAt, freed)).toEqual({ running: 0, waiting: 0 });
    await expectServed(await nextChat(hearth), 'after 8 non-streaming clients left');
  }, 60_000);

  it('client disconnects while its request waits in the queue: its place is free within 1 s', async () => {
    const holders = await Promise.all(Array.from({ length: SLOTS }, () => sendAndHold(hearth.port, request(true))));
    await untilCounts(hearth.baseUrl, (c) => c.running === SLOTS, 'every slot held');
    const queued = await Promise.all(
      Array.from({ length: QUEUE }, (_, i) => sendAndHold(hearth.port, request(i % 2 === 0))),
    );
    await untilCounts(hearth.baseUrl, (c) => c.waiting === QUEUE, 'the queue full');
    const leftAt = Date.now();
    await Promise.all(queued.map((c) => c.leave('fin')));
    expect(await countsWithinBound(hearth.baseUrl, leftAt, (c) => c.waiting === 0)).toEqual({
      running: SLOTS,
      waiting: 0,
    });
    // The next request takes a place in the queue (it was 503 queue_full while the abandoned ones held it) ...
    const next = nextChat(hearth);
    await untilCounts(hearth.baseUrl, (c) => c.waiting === 1, 'the next request queued');
    // ... and runs once the slots' clients leave too.
    await Promise.all(holders.map((c) => c.leave('reset')));
    await expectServed(await next);
    await untilCounts(hearth.baseUrl, freed, 'all free');
  }, 60_000);

  /** One client: streamed or not, how it leaves, and when: as soon as its request is sent, or ms after all were admitted. */
  const clientArb = fc.record({
    stream: fc.boolean(),
    leave: fc.constantFrom<Leave>('fin', 'reset'),
    early: fc.boolean(),
    afterMs: fc.integer({ min: 0, max: 300 }),
  });
  const scenarioArb = fc.array(clientArb, { minLength: 1, maxLength: SLOTS + QUEUE });

  it('generated mixes of clients that leave: every slot and queue place free within 1 s of the last leaving', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (clients) => {
        const what = `run ${++runs}: ${JSON.stringify(clients)}`;
        const held: Array<{ client: PendingClient; c: (typeof clients)[number] }> = [];
        const early: Array<Promise<void>> = [];
        for (const c of clients) {
          const client = await sendAndHold(hearth.port, request(c.stream));
          // An early leaver closes at once (an SDK's time-out firing, a retry): its request may not be admitted yet.
          if (c.early) early.push(client.leave(c.leave));
          else held.push({ client, c });
        }
        await untilCounts(
          hearth.baseUrl,
          (n) => n.running + n.waiting >= held.length,
          `${what}: the held requests admitted`,
        );
        await Promise.all([
          ...early,
          ...held.map(
            ({ client, c }) =>
              new Promise<void>((resolve) => setTimeout(() => void client.leave(c.leave).then(resolve), c.afterMs)),
          ),
        ]);
        const leftAt = Date.now();
        expect(await countsWithinBound(hearth.baseUrl, leftAt, freed), what).toEqual({ running: 0, waiting: 0 });
        await expectServed(await nextChat(hearth), what);
      }),
      { seed: SEED, numRuns: 12, endOnFailure: true },
    );
  }, 240_000);
});
