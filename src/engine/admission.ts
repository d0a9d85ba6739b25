import { clientClosedRequest, queueFull, shuttingDown } from '../errors/errors.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Priority } from '../protocol/priority.ts';
import { FairScheduler, type SchedulerTicket } from './fair-scheduler.ts';
import type { GenerationSchedule } from './generation.ts';

/** A generation in the scheduler's queue: hands its task to the pool, or is refused when another takes its place. */
export interface QueuedGeneration {
  handOver(): void;
  refuse(): void;
  /** An embedding request: it runs beside the loop (its own context), never on a slot another may yield. */
  embedding?: true;
}

/** How many tasks the pool takes: read at each decision (the slots are known only once the model is placed). */
export interface AdmissionCapacity {
  /** Slots of all workers together. */
  slots(): number;
  queueLimit: number;
  /** Whether the loop parks a batch job for an interactive one (the native engine). */
  preempts(): boolean;
  /**
   * Whether a generation can give its slot to another tenant's request (Admission.shareSlots()): the native engine
   * with one worker (the yield and the request it makes room for must meet in the same loop).
   */
  sharesSlots(): boolean;
}

/**
 * One generation's place from its admission to its end: waiting (queued), running (its first event came), ended.
 * `handedOver`: the pool has its task (the scheduler counts it as the tenant's running generation until it ends).
 */
export class AdmittedPlace {
  phase: 'waiting' | 'running' | 'ended' = 'waiting';
  handedOver = false;
  ticket: SchedulerTicket | null = null;

  constructor(
    private readonly admission: Admission,
    readonly schedule: GenerationSchedule,
  ) {}

  /** Waiting -> running (the generation's first event). */
  start(): void {
    this.admission.moved(this, 'running');
  }

  /**
   * The generation is on a slot (its prompt evaluated): an interactive one may now be asked to give the slot to
   * another tenant's request (`yieldSlot`, at most once; Admission.shareSlots()).
   */
  onSlot(yieldSlot: () => void): void {
    this.admission.onSlot(this, yieldSlot);
  }

  /** Charges the tenant for tokens served (prompt and generated) in the fair share. */
  charge(tokens: number): void {
    this.admission.scheduler.charge(this.schedule.tenant, tokens);
  }

  /** Ends the place (from either phase): its slot or queue place is free, the next waiting one may go. */
  leave(): void {
    this.admission.moved(this, 'ended');
  }
}

/**
 * Who may have the worker pool, on the main thread (contract "Fair share and priority between tenants"): the
 * slots plus a bounded queue; waiting generations and embedding requests in the FairScheduler's order;
 * a full queue may yield a place to another tenant's newcomer. Publishes hearth_num_requests_waiting / _running by
 * priority. Single owner: LocalEngine.
 */
export class Admission {
  /** Generations waiting for the pool, in the order they get it: nothing waits in Piscina's own queue. */
  readonly scheduler = new FairScheduler<QueuedGeneration>();
  private running = 0;
  private waiting = 0;
  /** Tasks (generations and embedding requests) handed to the pool and not ended, by priority. */
  private readonly inFlight: Record<Priority, number> = { interactive: 0, batch: 0 };
  /** Embedding requests still in the queue, with how to let them go (close()). */
  private readonly embeddingsWaiting = new Map<AdmittedPlace, (err: unknown) => void>();
  /** Generations waiting for a slot / holding one, by priority, as this thread counts them (publishLoad()). */
  private readonly waitingBy: Record<Priority, number> = { interactive: 0, batch: 0 };
  private readonly runningBy: Record<Priority, number> = { interactive: 0, batch: 0 };
  /** Interactive generations on a slot that shareSlots() may ask to yield (once each), with their hand-over order. */
  private readonly yieldable = new Map<AdmittedPlace, { serial: number; yieldSlot: () => void }>();
  private slotSerial = 0;
  /** Batch jobs the native loops parked now, by the workers' last reports (worker-reports.ts). */
  private parked = 0;
  private closed = false;

  constructor(
    private readonly capacity: AdmissionCapacity,
    private readonly metrics: Metrics,
    private readonly labels: { model: string },
  ) {
    this.publishLoad();
  }

  /** Requests holding a slot (embeddings included), and waiting for one. */
  load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting };
  }

  /**
   * Queues a generation (a throw of queue_full when full and no other tenant's place can be taken: that one is
   * refused instead). Call pump() once the caller is ready to hand over.
   */
  admit(schedule: GenerationSchedule, generation: QueuedGeneration): AdmittedPlace {
    if (this.full()) {
      // Full: the newcomer may take the place of another tenant's newest (or a batch request's): round-robin places.
      const yielded = this.scheduler.yieldPlace(schedule.tenant, schedule.priority);
      if (yielded === undefined) throw queueFull(1);
      yielded.refuse();
    }
    const place = new AdmittedPlace(this, schedule);
    this.waiting++;
    this.waitingBy[schedule.priority]++;
    this.publishLoad();
    const handOver = () => {
      place.handedOver = true;
      this.inFlight[schedule.priority]++;
      generation.handOver();
    };
    place.ticket = this.scheduler.enqueue(
      { handOver, refuse: () => generation.refuse(), ...(generation.embedding ? { embedding: true as const } : {}) },
      schedule.tenant,
      schedule.priority,
    );
    return place;
  }

  /**
   * An embedding request's turn: it waits in the scheduler with the generations (its tenant's share, its priority;
   * queue_full when full and no other tenant's place can be taken), and resolves with its place once the pool may
   * have it (running from then). The caller charges its tokens (place.charge) and ends it (place.leave) once.
   * close() lets a waiting one go with shutting_down; `signal` aborting lets it go with client_closed_request.
   */
  embeddingTurn(schedule: GenerationSchedule, signal?: AbortSignal): Promise<AdmittedPlace> {
    return new Promise((resolve, reject) => {
      // The client left while the request waited: its queue place is freed at once.
      const left = () => {
        if (!this.embeddingsWaiting.delete(place)) return;
        place.leave();
        reject(clientClosedRequest());
      };
      const place: AdmittedPlace = this.admit(schedule, {
        embedding: true,
        handOver: () => {
          signal?.removeEventListener('abort', left);
          this.embeddingsWaiting.delete(place);
          place.start();
          resolve(place);
        },
        refuse: () => {
          signal?.removeEventListener('abort', left);
          this.embeddingsWaiting.delete(place);
          place.leave();
          reject(queueFull(1));
        },
      });
      this.embeddingsWaiting.set(place, reject);
      signal?.addEventListener('abort', left, { once: true });
      if (signal?.aborted) return left();
      this.pump();
    });
  }

  /** The loops' parked batch jobs (they count as waiting in the load gauges). */
  setParked(parked: number): void {
    this.parked = parked;
    this.publishLoad();
  }

  /** Hands waiting generations and embedding requests, in the scheduler's order, to the pool while the slots (or admits()) let them. */
  pump(): void {
    if (this.closed) return; // close() cut what still waits
    for (let p = this.scheduler.peekPriority(); p !== null && this.admits(p); p = this.scheduler.peekPriority())
      this.scheduler.next()!.item.handOver();
    this.shareSlots();
  }

  /** AdmittedPlace.onSlot(): an interactive generation on a slot may yield it from now on. */
  onSlot(place: AdmittedPlace, yieldSlot: () => void): void {
    if (place.phase === 'ended' || place.schedule.priority !== 'interactive' || !this.capacity.sharesSlots()) return;
    this.yieldable.set(place, { serial: this.slotSerial++, yieldSlot });
    this.shareSlots(); // another tenant's request may have waited for a generation on a slot to yield
  }

  /**
   * Slots go round-robin between tenants (contract "Fair share"), not only queue places: while every slot is
   * taken and the interactive request that goes next belongs to a tenant with nothing running, the tenant
   * running the most generations (two at least) gives one up: its newest interactive generation on a slot yields
   * (the native loop parks it at its next step and resumes it, answer unchanged, when a slot frees) and the
   * waiting request is handed over in its place. At most one such hand-over per tenant with nothing running, and
   * never past twice the slots (what the loop holds).
   */
  private shareSlots(): void {
    if (this.closed || !this.capacity.sharesSlots()) return;
    const s = this.scheduler;
    while (
      s.peekPriority() === 'interactive' &&
      !this.slotsLeft() &&
      this.inFlight.interactive + this.inFlight.batch < 2 * this.capacity.slots()
    ) {
      const next = s.peekTenant()!;
      if (s.running(next) > 0 || s.peek()!.embedding) return; // an embedding needs no loop slot: it waits its turn
      let victim: AdmittedPlace | undefined;
      for (const [place, v] of this.yieldable) {
        const tenant = place.schedule.tenant;
        if (tenant === next || s.running(tenant) < 2) continue;
        const most = victim === undefined ? -1 : s.running(victim.schedule.tenant);
        if (s.running(tenant) > most || (s.running(tenant) === most && v.serial > this.yieldable.get(victim!)!.serial))
          victim = place;
      }
      if (victim === undefined) return;
      this.yieldable.get(victim)!.yieldSlot();
      this.yieldable.delete(victim);
      s.next()!.item.handOver();
    }
  }

  /** Shutdown: nothing more is handed over; waiting embedding requests are let go with shutting_down. */
  close(): void {
    this.closed = true;
    for (const [place, reject] of [...this.embeddingsWaiting]) {
      this.embeddingsWaiting.delete(place);
      place.leave();
      reject(shuttingDown());
    }
  }

  /** A place's move (AdmittedPlace.start / leave): the counts, the gauges, and the next hand-over when it ends. */
  moved(place: AdmittedPlace, to: 'running' | 'ended'): void {
    const priority = place.schedule.priority;
    if (place.phase === 'ended' || place.phase === to) return;
    if (place.phase === 'waiting') {
      this.waiting--;
      this.waitingBy[priority]--;
    } else {
      this.running--;
      this.runningBy[priority]--;
    }
    if (to === 'running') {
      this.running++;
      this.runningBy[priority]++;
    }
    place.phase = to;
    this.publishLoad();
    if (to !== 'ended') return;
    this.yieldable.delete(place);
    if (place.handedOver) {
      this.inFlight[priority]--;
      this.scheduler.finished(place.schedule.tenant);
      this.pump();
    } else {
      place.ticket?.remove();
    }
  }

  private full(): boolean {
    return this.running + this.waiting >= this.capacity.slots() + this.capacity.queueLimit;
  }

  /**
   * Whether the next waiting generation may have the pool now: while the slots are not all taken, or, for
   * interactive work on the native loop, while a batch generation can yield its slot to it (the loop parks the
   * batch job at its next step and resumes it when a slot frees: at most one interactive job per batch job
   * beyond the slots, so the loop holds at most twice its slots).
   */
  private admits(priority: Priority): boolean {
    if (this.slotsLeft()) return true;
    return (
      priority === 'interactive' &&
      this.capacity.preempts() &&
      this.inFlight.batch > 0 &&
      this.inFlight.interactive < this.capacity.slots()
    );
  }

  /** Whether the pool holds fewer tasks (generations and embeddings) than the workers have slots. */
  private slotsLeft(): boolean {
    return this.inFlight.interactive + this.inFlight.batch < this.capacity.slots();
  }

  /**
   * hearth_num_requests_waiting / _running by priority: a batch generation its loop parked (preempted, not yet
   * resumed) counts as waiting, by the workers' last reports.
   */
  private publishLoad(): void {
    const parked = Math.min(this.parked, this.runningBy.batch);
    this.metrics.requestsWaiting.set({ ...this.labels, priority: 'interactive' }, this.waitingBy.interactive);
    this.metrics.requestsRunning.set({ ...this.labels, priority: 'interactive' }, this.runningBy.interactive);
    this.metrics.requestsWaiting.set({ ...this.labels, priority: 'batch' }, this.waitingBy.batch + parked);
    this.metrics.requestsRunning.set({ ...this.labels, priority: 'batch' }, this.runningBy.batch - parked);
  }
}
