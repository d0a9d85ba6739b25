/**
 * The main thread's queue order (src/engine/fair-scheduler.ts, contract "Fair share and priority between
 * tenants"): interactive before batch; within a priority the tenant served the fewest tokens first, its own
 * requests in arrival order; idle time earns no credit; a removed ticket is gone.
 */
import { describe, expect, it } from 'vitest';
import { FairScheduler } from '../../../src/engine/fair-scheduler.ts';

/** Takes everything waiting, in order, as "tenant:item" (nothing finishes meanwhile unless `onTake` says so). */
function drain(s: FairScheduler<string>, onTake?: (tenant: string) => void): string[] {
  const out: string[] = [];
  for (let n = s.next(); n !== undefined; n = s.next()) {
    out.push(`${n.tenant}:${n.item}`);
    onTake?.(n.tenant);
  }
  return out;
}

describe('FairScheduler', () => {
  it('one tenant: first come, first served', () => {
    const s = new FairScheduler<string>();
    for (const i of ['1', '2', '3']) s.enqueue(i, 'a', 'interactive');
    expect(drain(s)).toEqual(['a:1', 'a:2', 'a:3']);
  });

  it("a flood of one tenant does not hold up another tenant's request that came after it", () => {
    const s = new FairScheduler<string>();
    for (let i = 0; i < 8; i++) s.enqueue(`${i}`, 'a', 'interactive');
    s.enqueue('x', 'b', 'interactive');
    // Both start at 0 tokens; b has nothing running, a has once its first request goes: b is next after it.
    const first = s.next()!;
    expect(first).toMatchObject({ tenant: 'a', item: '0' });
    s.charge('a', 50);
    expect(s.next()).toMatchObject({ tenant: 'b', item: 'x' });
  });

  it('round-robin weighted by tokens: the tenant with fewer tokens served goes next, until it has caught up', () => {
    const s = new FairScheduler<string>();
    for (let i = 0; i < 6; i++) s.enqueue(`a${i}`, 'a', 'interactive');
    for (let i = 0; i < 6; i++) s.enqueue(`b${i}`, 'b', 'interactive');
    // a's requests cost 30 tokens each, b's 10: b gets three turns for each of a's.
    const cost: Record<string, number> = { a: 30, b: 10 };
    const order = drain(s, (t) => s.charge(t, cost[t]!)).map((x) => x.split(':')[0]);
    expect(order.slice(0, 8).join('')).toBe('abbbabbb');
  });

  it("interactive requests go before batch ones, whatever the tenants' tokens", () => {
    const s = new FairScheduler<string>();
    s.enqueue('b1', 'heavy', 'batch');
    s.enqueue('i1', 'heavy', 'interactive');
    s.charge('heavy', 1_000_000);
    s.enqueue('b2', 'light', 'batch');
    s.enqueue('i2', 'light', 'interactive');
    expect(s.peekPriority()).toBe('interactive');
    expect(s.waiting('interactive')).toBe(2);
    expect(s.waiting('batch')).toBe(2);
    expect(
      drain(s)
        .map((x) => x.split(':')[1]![0])
        .join(''),
    ).toBe('iibb');
    expect(s.waiting()).toBe(0);
    expect(s.peekPriority()).toBeNull();
  });

  it('within batch, tenants share by tokens too', () => {
    const s = new FairScheduler<string>();
    for (let i = 0; i < 4; i++) s.enqueue(`a${i}`, 'a', 'batch');
    for (let i = 0; i < 4; i++) s.enqueue(`b${i}`, 'b', 'batch');
    const order = drain(s, (t) => s.charge(t, 10)).map((x) => x.split(':')[0]);
    expect(order.join('')).toBe('abababab');
  });

  it('a tenant coming back after idling starts level with the least-served active tenant: no burst credit', () => {
    const s = new FairScheduler<string>();
    s.enqueue('old', 'b', 'interactive');
    s.next();
    s.charge('b', 10);
    s.finished('b'); // b rests with 10 tokens
    s.enqueue('a0', 'a', 'interactive');
    s.next();
    s.charge('a', 1_000);
    for (let i = 1; i < 4; i++) s.enqueue(`a${i}`, 'a', 'interactive');
    s.enqueue('b1', 'b', 'interactive');
    expect(s.served('b')).toBe(1_000); // lifted to a's level, not its own 10
    // Level on tokens, b has nothing running: b goes first once, then they alternate by tokens.
    expect(s.next()).toMatchObject({ tenant: 'b', item: 'b1' });
  });

  it('peekTenant names the tenant next() takes from without taking; running counts what next() gave until finished', () => {
    const s = new FairScheduler<string>();
    expect(s.peekTenant()).toBeNull();
    s.enqueue('1', 'a', 'interactive');
    s.enqueue('2', 'a', 'interactive');
    expect(s.peekTenant()).toBe('a');
    expect(s.next()?.tenant).toBe('a');
    s.charge('a', 5);
    s.enqueue('x', 'b', 'batch');
    s.enqueue('y', 'b', 'interactive');
    // b has served fewer tokens: its interactive request goes next (its batch one after every interactive one).
    expect(s.peekTenant()).toBe('b');
    expect(s.waiting()).toBe(3);
    expect([s.running('a'), s.running('b'), s.running('nobody')]).toEqual([1, 0, 0]);
    expect(s.next()?.item).toBe('y');
    expect(s.running('b')).toBe(1);
    s.finished('b');
    expect(s.running('b')).toBe(0);
  });

  it('a removed request is gone; removing twice, or after it was taken, does nothing', () => {
    const s = new FairScheduler<string>();
    const t1 = s.enqueue('1', 'a', 'interactive');
    s.enqueue('2', 'a', 'interactive');
    const t3 = s.enqueue('3', 'b', 'batch');
    t1.remove();
    t1.remove();
    t3.remove();
    expect(s.waiting()).toBe(1);
    const taken = s.enqueue('4', 'a', 'interactive');
    expect(drain(s)).toEqual(['a:2', 'a:4']);
    taken.remove();
    expect(s.waiting()).toBe(0);
  });

  it('queue places round-robin: a full queue gives a newcomer the newest place of the tenant holding the most, or of batch work', () => {
    const s = new FairScheduler<string>();
    for (let i = 0; i < 4; i++) s.enqueue(`a${i}`, 'a', 'interactive');
    s.enqueue('b0', 'b', 'interactive');
    // a holds 4, b 1: b's newcomer takes a's newest place; a's own newcomer takes nobody's.
    expect(s.yieldPlace('b', 'interactive')).toBe('a3');
    expect(s.yieldPlace('a', 'interactive')).toBeUndefined();
    // Now a holds 3, b 1 (+1 about to be queued): only a lead of two or more yields.
    s.enqueue('b1', 'b', 'interactive');
    expect(s.yieldPlace('b', 'interactive')).toBeUndefined();
    expect(s.yieldPlace('c', 'interactive')).toBe('a2');
    // Batch places go first to interactive newcomers, even the same tenant's; a batch newcomer never takes an interactive place.
    s.enqueue('x0', 'a', 'batch');
    s.enqueue('x1', 'a', 'batch');
    expect(s.yieldPlace('a', 'interactive')).toBe('x1');
    expect(s.yieldPlace('b', 'batch')).toBeUndefined(); // a leads b by one batch request only
    expect(s.waiting('batch')).toBe(1);
    expect(drain(s)).toEqual(['a:a0', 'b:b0', 'a:a1', 'b:b1', 'a:x0']);
  });

  it('forgets resting tenants beyond its bound (memory stays bounded), keeping the most recent', () => {
    const s = new FairScheduler<string>(2);
    for (const t of ['a', 'b', 'c']) {
      s.enqueue('x', t, 'interactive');
      s.next();
      s.charge(t, 5);
      s.finished(t);
    }
    expect(s.served('a')).toBe(0);
    expect(s.served('b')).toBe(5);
    expect(s.served('c')).toBe(5);
  });
});
