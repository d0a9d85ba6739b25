/**
 * Who may have the worker pool (src/engine/admission.ts), without workers: the slots plus a bounded queue, the
 * hand-over in the FairScheduler's order as places end, a full queue's place yielded to another tenant, an
 * interactive job beyond the slots only where the loop preempts a batch one, embeddings before generations, and
 * the load gauges (a parked batch job counts as waiting).
 */
import { describe, expect, it } from 'vitest';
import { Admission, type AdmittedPlace } from '../../../src/engine/admission.ts';
import type { GenerationSchedule } from '../../../src/engine/generation.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';

const LABELS = { model: 'local/m' };

function setup(o: { slots: number; queueLimit: number; preempts?: boolean; sharesSlots?: boolean }) {
  const metrics = createMetrics();
  const admission = new Admission(
    {
      slots: () => o.slots,
      queueLimit: o.queueLimit,
      preempts: () => o.preempts ?? false,
      sharesSlots: () => o.sharesSlots ?? false,
    },
    metrics,
    LABELS,
  );
  const log: string[] = [];
  const admit = (name: string, schedule: GenerationSchedule): AdmittedPlace => {
    const place = admission.admit(schedule, {
      handOver: () => log.push(`run ${name}`),
      refuse: () => {
        log.push(`refused ${name}`);
        place.leave();
      },
    });
    admission.pump();
    return place;
  };
  const gauge = async (name: 'hearth_num_requests_waiting' | 'hearth_num_requests_running', priority: string) => {
    const m = (await metrics.registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.priority === priority);
    return m?.value;
  };
  return { admission, admit, log, gauge };
}

const a = (priority: 'interactive' | 'batch' = 'interactive'): GenerationSchedule => ({ tenant: 'a', priority });
const b = (priority: 'interactive' | 'batch' = 'interactive'): GenerationSchedule => ({ tenant: 'b', priority });

describe('Admission', () => {
  it('an account with nothing running takes a slot from the account holding the most: its newest generation on a slot yields', () => {
    const { admit, log } = setup({ slots: 2, queueLimit: 4, sharesSlots: true });
    const yields: string[] = [];
    const onSlot = (place: AdmittedPlace, name: string) => {
      place.start();
      place.onSlot(() => yields.push(name));
    };
    const a1 = admit('a1', a());
    const a2 = admit('a2', a());
    admit('a3', a()); // a's own request waits: an account never takes a slot from itself
    onSlot(a1, 'a1');
    onSlot(a2, 'a2');
    expect(log).toEqual(['run a1', 'run a2']);
    const b1 = admit('b1', b());
    expect(yields).toEqual(['a2']); // the newest on a slot
    expect(log).toEqual(['run a1', 'run a2', 'run b1']); // at once, ahead of a's queue
    const b2 = admit('b2', b()); // b runs one now: its next request waits its turn (no second yield)
    expect(yields).toEqual(['a2']);
    expect(log).toEqual(['run a1', 'run a2', 'run b1']);
    b1.start();
    b1.leave(); // b1's slot goes back (the loop resumes a2), and b, with nothing running again, takes one at once
    expect(yields).toEqual(['a2', 'a1']); // a2 yields no second time: a1 is a's generation left to ask
    expect(log).toEqual(['run a1', 'run a2', 'run b1', 'run b2']);
    a2.leave(); // the loop still holds a1 (parked, resumed on a2's slot) and b2: both slots
    expect(log).toEqual(['run a1', 'run a2', 'run b1', 'run b2']);
    b2.start();
    b2.leave(); // now a slot is free: a's own queue goes on
    expect(log).toEqual(['run a1', 'run a2', 'run b1', 'run b2', 'run a3']);
  });

  it('no yield without sharesSlots (several workers, node-llama-cpp), nor for batch work, nor from an account running one', () => {
    const off = setup({ slots: 1, queueLimit: 4 });
    const x = off.admit('a1', a());
    x.start();
    x.onSlot(() => {
      throw new Error('must not yield');
    });
    off.admit('b1', b());
    expect(off.log).toEqual(['run a1']);

    const on = setup({ slots: 1, queueLimit: 4, sharesSlots: true });
    const y = on.admit('a1', a());
    y.start();
    y.onSlot(() => {
      throw new Error('must not yield: a runs only one');
    });
    on.admit('b1', b());
    on.admit('c1', b('batch'));
    expect(on.log).toEqual(['run a1']);
  });

  it('hands over while slots are free, queues up to the limit, refuses beyond with queue_full', () => {
    const { admission, admit, log } = setup({ slots: 1, queueLimit: 1 });
    const first = admit('1', a());
    admit('2', a());
    expect(log).toEqual(['run 1']);
    expect(() => admit('3', a())).toThrow(expect.objectContaining({ code: 'queue_full', status: 503 }));
    expect(admission.load()).toEqual({ running: 0, waiting: 2 }); // running counts from a place's first event
    first.start();
    expect(admission.load()).toEqual({ running: 1, waiting: 1 });
    first.leave();
    expect(log).toEqual(['run 1', 'run 2']);
    expect(admission.load()).toEqual({ running: 0, waiting: 1 });
  });

  it('a queued place that leaves (a cancel while it waits) is never handed over, and frees its queue place', () => {
    const { admission, admit, log } = setup({ slots: 1, queueLimit: 1 });
    const first = admit('1', a());
    const second = admit('2', a());
    second.leave();
    expect(admission.load()).toEqual({ running: 0, waiting: 1 });
    admit('3', a()); // the queue place is free again
    first.leave();
    expect(log).toEqual(['run 1', 'run 3']);
  });

  it("a full queue yields its newest batch place to another tenant's interactive newcomer, which is refused otherwise", () => {
    const { admit, log } = setup({ slots: 1, queueLimit: 1 });
    admit('1', a('batch'));
    admit('2', a('batch'));
    admit('3', b());
    expect(log).toEqual(['run 1', 'refused 2']);
    expect(() => admit('4', b())).toThrow(expect.objectContaining({ code: 'queue_full' }));
  });

  it('interactive work goes beyond the slots only where the loop preempts, and only while batch work holds a slot', () => {
    for (const preempts of [false, true]) {
      const { admit, log } = setup({ slots: 1, queueLimit: 2, preempts });
      admit('batch', a('batch'));
      admit('chat', b());
      admit('more', b());
      expect(log).toEqual(preempts ? ['run batch', 'run chat'] : ['run batch']);
    }
  });

  it('embedding requests wait in the fair order with the generations: interactive before batch, the less-served tenant first', async () => {
    const { admission, admit, log } = setup({ slots: 1, queueLimit: 4 });
    const first = admit('1', a());
    admit('2', a());
    void admission.embeddingTurn(b('batch')).then(() => log.push('embed b batch'));
    const embed = admission.embeddingTurn(b()).then((p) => {
      log.push('embed b');
      return p;
    });
    expect(admission.load()).toEqual({ running: 0, waiting: 4 });
    first.start();
    first.charge(10);
    first.leave();
    const place = await embed; // b has served fewer tokens: its interactive request before a's second
    expect(log).toEqual(['run 1', 'embed b']);
    expect(admission.load()).toEqual({ running: 1, waiting: 2 }); // counted as running from its hand-over
    place.charge(50);
    place.leave();
    expect(log).toEqual(['run 1', 'embed b', 'run 2']); // b has been served 50 tokens, a 10: a's turn
    expect(admission.load()).toEqual({ running: 0, waiting: 2 }); // a's second (handed over, no event yet) and the batch embedding, behind every interactive request
  });

  it('publishes waiting / running by priority; a parked batch job counts as waiting', async () => {
    const { admission, admit, gauge } = setup({ slots: 2, queueLimit: 1 });
    admit('1', a('batch')).start();
    admit('2', a('batch')).start();
    admit('3', b());
    expect([
      await gauge('hearth_num_requests_running', 'batch'),
      await gauge('hearth_num_requests_waiting', 'interactive'),
    ]).toEqual([2, 1]);
    admission.setParked(1);
    expect([
      await gauge('hearth_num_requests_running', 'batch'),
      await gauge('hearth_num_requests_waiting', 'batch'),
    ]).toEqual([1, 1]);
  });

  it('after close() nothing more is handed over and waiting embedding requests are let go with shutting_down', async () => {
    const { admission, admit, log } = setup({ slots: 1, queueLimit: 2 });
    const first = admit('1', a());
    admit('2', a());
    const turn = admission.embeddingTurn(b());
    admission.close();
    await expect(turn).rejects.toMatchObject({ code: 'shutting_down', status: 503 });
    first.leave();
    expect(log).toEqual(['run 1']);
    expect(admission.load()).toEqual({ running: 0, waiting: 1 });
  });

  it('an embedding request whose client leaves while it waits frees its queue place at once; the next one goes', async () => {
    const { admission, admit, log } = setup({ slots: 1, queueLimit: 2 });
    const first = admit('1', a());
    first.start();
    const left = new AbortController();
    const leaving = admission.embeddingTurn(b(), left.signal);
    const staying = admission.embeddingTurn(b());
    expect(admission.load()).toEqual({ running: 1, waiting: 2 });
    left.abort();
    await expect(leaving).rejects.toMatchObject({ code: 'client_closed_request', status: 499 });
    expect(admission.load()).toEqual({ running: 1, waiting: 1 });
    first.leave();
    const place = await staying;
    expect(admission.load()).toEqual({ running: 1, waiting: 0 });
    place.leave();
    // A signal that aborted before the turn was asked: refused, no place kept.
    await expect(admission.embeddingTurn(a(), AbortSignal.abort())).rejects.toMatchObject({
      code: 'client_closed_request',
    });
    expect(admission.load()).toEqual({ running: 0, waiting: 0 });
    expect(log).toEqual(['run 1']);
  });

  it('an embedding request takes no slot from another tenant (it runs beside the loop), and is refused when full', async () => {
    const { admission, admit, log } = setup({ slots: 2, queueLimit: 1, sharesSlots: true });
    for (const name of ['a1', 'a2']) {
      const p = admit(name, a());
      p.start();
      p.onSlot(() => {
        throw new Error('must not yield for an embedding');
      });
    }
    const turn = admission.embeddingTurn(b());
    expect(log).toEqual(['run a1', 'run a2']);
    await expect(admission.embeddingTurn(a())).rejects.toMatchObject({ code: 'queue_full' });
    void turn;
  });
});
