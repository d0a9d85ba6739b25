import type { Priority } from '../protocol/priority.ts';

/**
 * The order in which waiting generations get slots (contract "Fair share and priority between tenants"):
 * interactive before batch; within a priority, the tenant (account) that has been served the fewest tokens
 * (prompt + generated, charged as they are counted) goes next, its requests first come, first served. So one
 * tenant's flood waits behind its own requests, never in front of another tenant's.
 *
 * Served tokens are a virtual clock per tenant: a tenant that becomes active again (nothing waiting or
 * running) starts no lower than the least-served active tenant, so idle time earns no burst that would starve
 * the others later. Ties go to the tenant with fewer generations running, then to the older request.
 *
 * Pure data structure: no timers, no I/O. Single owner: LocalEngine, on the main thread. Holds per tenant only
 * while it has work, plus the last `rememberTenants` tenants' counters (bounded memory).
 */
export class FairScheduler<T> {
  private readonly tenants = new Map<string, TenantState<T>>();
  /** Tenants without work, their served counter kept for a comeback (insertion order = least recently active first). */
  private readonly resting = new Map<string, number>();
  private readonly waitingBy: Record<Priority, number> = { interactive: 0, batch: 0 };
  private arrivals = 0;

  constructor(private readonly rememberTenants = 10_000) {}

  /** Generations waiting at `priority` (all when absent). */
  waiting(priority?: Priority): number {
    return priority === undefined ? this.waitingBy.interactive + this.waitingBy.batch : this.waitingBy[priority];
  }

  /** Queues `item`; the ticket takes it out again (a cancel while it waits). */
  enqueue(item: T, tenant: string, priority: Priority): SchedulerTicket {
    const t = this.activate(tenant);
    const entry: Entry<T> = { item, priority, seq: this.arrivals++, queued: true };
    t.queues[priority].push(entry);
    this.waitingBy[priority]++;
    return {
      remove: () => {
        if (!entry.queued) return;
        entry.queued = false;
        const q = t.queues[priority];
        q.splice(q.indexOf(entry), 1);
        this.waitingBy[priority]--;
        this.settle(tenant, t);
      },
    };
  }

  /** The priority of the request next() would return, or null when nothing waits. */
  peekPriority(): Priority | null {
    if (this.waitingBy.interactive > 0) return 'interactive';
    return this.waitingBy.batch > 0 ? 'batch' : null;
  }

  /**
   * Takes the next request: interactive first, then the least-served tenant's oldest. The tenant counts it as
   * running until finished(tenant).
   */
  next(): { item: T; priority: Priority; tenant: string } | undefined {
    const priority = this.peekPriority();
    if (priority === null) return undefined;
    const [bestName, best] = this.pick(priority)!;
    const entry = best.queues[priority].shift()!;
    entry.queued = false;
    this.waitingBy[priority]--;
    best.running++;
    return { item: entry.item, priority, tenant: bestName };
  }

  /** The request next() would return, without taking it; undefined when nothing waits. */
  peek(): T | undefined {
    const priority = this.peekPriority();
    return priority === null ? undefined : this.pick(priority)![1].queues[priority][0]!.item;
  }

  /** The tenant whose request next() would return, or null when nothing waits. */
  peekTenant(): string | null {
    const priority = this.peekPriority();
    return priority === null ? null : this.pick(priority)![0];
  }

  /** Generations of `tenant` that next() returned and that have not finished. */
  running(tenant: string): number {
    return this.tenants.get(tenant)?.running ?? 0;
  }

  /** The tenant with a request waiting at `priority` that goes first, with its state. */
  private pick(priority: Priority): [string, TenantState<T>] | null {
    let bestName = '';
    let best: TenantState<T> | null = null;
    for (const [name, t] of this.tenants) {
      const head = t.queues[priority][0];
      if (head === undefined) continue;
      if (best === null || before(t, head, best, best.queues[priority][0]!)) {
        best = t;
        bestName = name;
      }
    }
    return best === null ? null : [bestName, best];
  }

  /**
   * Queue places go round-robin too: when the queue is full, a request of `tenant` at `priority` may take the place
   * of another waiting one, which is taken out and returned (its owner refuses it). Interactive work takes the
   * newest batch request's place first (of the tenant with the most batch requests waiting); otherwise, within
   * the priority, the newest request of the tenant with the most waiting, if that holds at least two more than
   * `tenant`. Undefined: no place to take (the newcomer is refused).
   */
  yieldPlace(tenant: string, priority: Priority): T | undefined {
    const order: Priority[] = priority === 'interactive' ? ['batch', 'interactive'] : ['batch'];
    for (const p of order) {
      let victimName = '';
      let victim: TenantState<T> | null = null;
      for (const [name, t] of this.tenants) {
        if (t.queues[p].length > (victim?.queues[p].length ?? 0)) {
          victim = t;
          victimName = name;
        }
      }
      if (victim === null) continue;
      const own = this.tenants.get(tenant)?.queues[p].length ?? 0;
      if (p === priority && (victimName === tenant || victim.queues[p].length < own + 2)) continue;
      const entry = victim.queues[p].pop()!;
      entry.queued = false;
      this.waitingBy[p]--;
      this.settle(victimName, victim);
      return entry.item;
    }
    return undefined;
  }

  /** Counts `tokens` (prompt or generated) against the tenant's share. */
  charge(tenant: string, tokens: number): void {
    const t = this.tenants.get(tenant);
    if (t !== undefined) t.served += tokens;
  }

  /** A generation next() returned has ended (done, failed or cancelled). */
  finished(tenant: string): void {
    const t = this.tenants.get(tenant);
    if (t === undefined) return;
    t.running--;
    this.settle(tenant, t);
  }

  /** The tenant's served tokens (tests and the bench read it); 0 for one never seen. */
  served(tenant: string): number {
    return this.tenants.get(tenant)?.served ?? this.resting.get(tenant) ?? 0;
  }

  private activate(tenant: string): TenantState<T> {
    const known = this.tenants.get(tenant);
    if (known !== undefined) return known;
    let floor = Infinity;
    for (const t of this.tenants.values()) floor = Math.min(floor, t.served);
    const before = this.resting.get(tenant) ?? 0;
    this.resting.delete(tenant);
    const t: TenantState<T> = {
      served: floor === Infinity ? before : Math.max(before, floor),
      running: 0,
      queues: { interactive: [], batch: [] },
    };
    this.tenants.set(tenant, t);
    return t;
  }

  /** A tenant with nothing waiting or running rests: only its counter is kept (bounded). */
  private settle(name: string, t: TenantState<T>): void {
    if (t.running > 0 || t.queues.interactive.length > 0 || t.queues.batch.length > 0) return;
    this.tenants.delete(name);
    this.resting.set(name, t.served);
    if (this.resting.size > this.rememberTenants) this.resting.delete(this.resting.keys().next().value!);
  }
}

export interface SchedulerTicket {
  /** Idempotent; a no-op once next() took the request. */
  remove(): void;
}

interface Entry<T> {
  item: T;
  priority: Priority;
  seq: number;
  queued: boolean;
}

interface TenantState<T> {
  served: number;
  running: number;
  queues: Record<Priority, Array<Entry<T>>>;
}

/** Whether tenant `a` (head request `ah`) goes before `b` (head `bh`): fewer tokens served, fewer running, older request. */
function before<T>(a: TenantState<T>, ah: Entry<T>, b: TenantState<T>, bh: Entry<T>): boolean {
  if (a.served !== b.served) return a.served < b.served;
  if (a.running !== b.running) return a.running < b.running;
  return ah.seq < bh.seq;
}
