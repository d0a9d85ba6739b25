import fs from 'node:fs';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { DirectCall, DirectEndpoint, DirectUrl } from '../inference/direct-answer.ts';
import { checkInput } from './batch-input.ts';
import { type BatchError, type BatchLine, type BatchRecord, type BatchStatus, nowSeconds } from './batch-records.ts';
import type { BatchStore } from './batch-store.ts';
import { type BatchOwnerCheck, OWNER_GONE_CODES } from './batch-owner.ts';

export interface BatchRunnerOptions {
  /** Lines answered at once by this process (each a generation at `batch` priority). */
  concurrency: number;
  /** How often active batches are looked at when nothing nudges. */
  tickMs?: number;
  /** Longest line body (the synchronous routes' --body-limit-bytes). */
  lineLimit: number;
  /** How long files are kept (--batch-ttl-days): the output and error files too. */
  ttlDays: number;
}

const DAY_S = 86_400;
/** After a line was refused for the server's state (queue full, warming up), no new line starts for this long. */
const BACKOFF_MS = 1_000;

/**
 * Works on every active batch of the store, one per process (main thread). Each tick, per batch:
 * - `validating`: reads the input file (checkInput) and stores its lines, then `in_progress` with the total; a
 *   malformed line fails the batch (`failed`, `errors` naming the lines).
 * - `in_progress`: claims lines up to `concurrency` in flight (the store hands each line to one claimer) and
 *   answers each through the shared endpoint's own plans (directEndpoints) as the batch's owner at `batch`
 *   priority; each answer is recorded once (finishLine). A line refused for the server's state (503/429) goes back
 *   unanswered and is tried again. When no line is open: `finalizing`, the output and error files, `completed`.
 *   Past the completion window: `expired`, with what was answered.
 * - `cancelling`: no new line starts; once none of it is in flight here, the files of what was answered, `cancelled`.
 * - Its owner gone (batch-owner.ts: the key that made it revoked, or no longer the account's), checked on every
 *   tick and again before each claim: a `validating` or `in_progress` batch moves to `cancelling` with an `errors`
 *   entry naming the reason, and its lines in flight here are cut and given back unanswered; it ends `cancelled`,
 *   the lines answered before in its output, the others in its error file with that reason. Every replica checks
 *   on its own, so one that did not revoke the key stops too.
 * State transitions go through store.updateBatch (one replica wins each). A restart resumes: lines without an answer
 * are claimed again; an answer recorded before a crash is never asked again.
 */
export class BatchRunner {
  readonly claimer = randomUUID();
  private readonly inflight = new Map<string, InflightLine>();
  private readonly busy = new Set<string>();
  /** Batches whose background step failed, by how many times in a row (its retry waits: background). */
  private readonly failures = new Map<string, number>();
  /** Which account fillFairly starts with (one further every tick). */
  private turn = 0;
  /** Claimed lines no longer in flight that could not be given back yet (released at the next tick). */
  private readonly giveBack: Array<{ batchId: string; index: number }> = [];
  private readonly timer: NodeJS.Timeout;
  private ticking = false;
  private again = false;
  private stopped = false;
  private pausedUntil = 0;

  constructor(
    private readonly store: BatchStore,
    private readonly endpoints: Record<DirectUrl, DirectEndpoint>,
    private readonly log: Logger,
    private readonly o: BatchRunnerOptions,
    /** Whether the batch's owner may still have lines run (keyOwnerCheck in main.ts). */
    private readonly owner: BatchOwnerCheck,
  ) {
    this.timer = setInterval(() => this.nudge(), o.tickMs ?? 1_000);
    this.timer.unref();
    setImmediate(() => this.nudge());
  }

  /** Looks at the batches now (a batch was made or cancelled, a line finished). */
  nudge(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((err: unknown) =>
        this.log.warn('batch runner tick failed', { error: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.nudge();
        }
      });
  }

  private async tick(): Promise<void> {
    // Lines whose answer could not be recorded (the database failed meanwhile) go back before the claims are renewed:
    // renewClaims renews every line this process claimed, and one no longer in flight would otherwise be held for ever.
    for (const l of this.giveBack.splice(0))
      await this.store.releaseLine(l.batchId, l.index, this.claimer).catch(() => this.giveBack.push(l));
    await this.store.renewClaims(this.claimer);
    const running: BatchRecord[] = [];
    for (const id of await this.store.activeBatchIds()) {
      if (this.stopped) return;
      let b = await this.store.getBatch(id);
      if (b === undefined || this.busy.has(id)) continue;
      const gone = b.status === 'finalizing' ? null : this.owner(b);
      if (gone !== null) b = await this.ownerGone(b, gone);
      if (b.status === 'validating') this.background(id, () => this.validate(b));
      else if (b.status === 'in_progress') {
        if (nowSeconds() >= b.expiresAt) this.background(id, () => this.finalize(b.id, 'in_progress', 'expired'));
        else running.push(b);
      } else if (b.status === 'cancelling') {
        if (this.inflightOf(id) === 0) this.background(id, () => this.finalize(b.id, 'cancelling', 'cancelled'));
      } else if (b.status === 'finalizing') this.background(id, () => this.finalize(b.id, 'finalizing', 'completed'));
    }
    await this.fillFairly(running);
  }

  /**
   * Shares the free line slots between the running batches a line at a time, round-robin between accounts (each
   * account's batches in turn), starting one account further every tick: a 50,000-line batch no longer holds every
   * slot until it ends while a later batch, of its account or another's, waits (contract "Fair share").
   */
  private async fillFairly(running: BatchRecord[]): Promise<void> {
    const byAccount = new Map<string, BatchRecord[]>();
    for (const b of running) byAccount.set(b.accountId, [...(byAccount.get(b.accountId) ?? []), b]);
    const accounts = [...byAccount.values()];
    const turn = this.turn++;
    const order: BatchRecord[] = [];
    for (let round = 0; order.length < running.length; round++) {
      for (let a = 0; a < accounts.length; a++) {
        const batches = accounts[(a + turn) % accounts.length]!;
        if (round < batches.length) order.push(batches[(round + turn) % batches.length]!);
      }
    }
    const drained = new Set<string>();
    for (let claimed = true; claimed && !this.stopped;) {
      claimed = false;
      for (const b of order) {
        if (this.inflight.size >= this.o.concurrency) break;
        if (drained.has(b.id)) continue;
        if ((await this.claim(b, 1)) > 0) claimed = true;
        else drained.add(b.id);
      }
    }
    for (const b of order) await this.finalizeIfDone(b);
  }

  /** Runs a batch's one long step (validation, finalization) while the tick goes on; one at a time per batch here. */
  private background(id: string, step: () => Promise<void>): void {
    this.busy.add(id);
    void step()
      .then(
        () => {
          this.busy.delete(id);
          this.failures.delete(id);
        },
        (err: unknown) => {
          // Tried again at the next ticks, each time after twice as long (1 s .. 60 s): never in a tight loop.
          const failures = (this.failures.get(id) ?? 0) + 1;
          this.failures.set(id, failures);
          this.log.warn('batch step failed', {
            batch: id,
            failures,
            error: err instanceof Error ? err.message : String(err),
          });
          setTimeout(() => this.busy.delete(id), Math.min(60_000, 1_000 * 2 ** (failures - 1))).unref();
        },
      )
      .finally(() => this.nudge());
  }

  /**
   * The batch's owner is gone: its lines in flight here are cut and given back unanswered (never recorded), and a
   * batch still `validating` or `in_progress` moves to `cancelling` with `error` (one replica wins). Returns the
   * record as it is now.
   */
  private async ownerGone(b: BatchRecord, error: BatchError): Promise<BatchRecord> {
    for (const [key, f] of this.inflight) {
      if (f.batchId !== b.id) continue;
      this.inflight.delete(key);
      f.call?.cancel();
      await this.store.releaseLine(b.id, f.index, this.claimer);
    }
    if (b.status !== 'validating' && b.status !== 'in_progress') return b;
    const now = nowSeconds();
    const next = await this.store.updateBatch(b.id, (c) =>
      c.status === 'validating' || c.status === 'in_progress'
        ? { ...c, status: 'cancelling', cancellingAt: now, errors: [...(c.errors ?? []), error] }
        : undefined,
    );
    if (next !== undefined) this.log.info('batch cancelled: its owner is gone', { batch: b.id, reason: error.code });
    return next ?? (await this.store.getBatch(b.id)) ?? b;
  }

  private inflightOf(batchId: string): number {
    let n = 0;
    for (const f of this.inflight.values()) if (f.batchId === batchId) n++;
    return n;
  }

  private async validate(b: BatchRecord): Promise<void> {
    const file = await this.store.getFile(b.inputFileId);
    const check =
      file === undefined
        ? {
            lines: 0,
            errors: [
              {
                code: 'file_not_found',
                message: `The input file ${b.inputFileId} is gone`,
                param: 'input_file_id',
                line: null,
              },
            ],
          }
        : await checkInput(this.store.readFile(file.id), b.endpoint, this.o.lineLimit, (lines) =>
            this.store.addLines(b.id, lines),
          );
    const now = nowSeconds();
    if (check.errors.length > 0) {
      await this.store.dropLines(b.id);
      await this.store.updateBatch(b.id, (c) =>
        c.status === 'validating'
          ? { ...c, status: 'failed', errors: check.errors, failedAt: now }
          : c.status === 'cancelling'
            ? { ...c, status: 'cancelled', cancelledAt: now }
            : undefined,
      );
      return;
    }
    await this.store.updateBatch(b.id, (c) =>
      c.status === 'validating'
        ? { ...c, status: 'in_progress', total: check.lines, inProgressAt: now }
        : c.status === 'cancelling' && c.total === 0
          ? { ...c, total: check.lines }
          : undefined,
    );
  }

  /** Claims up to `n` of the batch's open lines and starts them; answers how many it claimed. */
  private async claim(b: BatchRecord, n: number): Promise<number> {
    if (Date.now() < this.pausedUntil || this.owner(b) !== null) return 0;
    const claimed = await this.store.claimLines(b.id, this.claimer, n);
    if (claimed.length > 0) this.log.debug('batch lines claimed', { batch: b.id, lines: claimed.length });
    // Revoked while the claim was on its way: the lines go back unanswered (the next tick ends the batch).
    if (this.owner(b) !== null) {
      for (const line of claimed) await this.store.releaseLine(b.id, line.index, this.claimer);
      return 0;
    }
    for (const line of claimed) this.answer(b, line);
    return claimed.length;
  }

  /** A running batch with no line open or in flight moves to `finalizing`, and its files are written. */
  private async finalizeIfDone(b: BatchRecord): Promise<void> {
    if (this.inflightOf(b.id) === 0 && (await this.store.openLineCount(b.id)) === 0) {
      const now = nowSeconds();
      const next = await this.store.updateBatch(b.id, (c) =>
        c.status === 'in_progress' ? { ...c, status: 'finalizing', finalizingAt: now } : undefined,
      );
      if (next !== undefined) this.background(b.id, () => this.finalize(b.id, 'finalizing', 'completed'));
    }
  }

  private answer(b: BatchRecord, line: BatchLine): void {
    const key = `${b.id} ${line.index}`;
    const call = this.endpoints[b.endpoint as DirectUrl]!(JSON.parse(line.body), {
      keyId: b.keyId,
      accountId: b.accountId,
      priority: 'batch',
    });
    const entry: InflightLine = { batchId: b.id, index: line.index, call };
    this.inflight.set(key, entry);
    void call.done
      .then(async (a) => {
        if (this.stopped || this.inflight.get(key) !== entry) return; // stopped, or cut (ownerGone): given back there
        if (this.owner(b) !== null) {
          // Answered after its owner went: not recorded (the batch stops at the revocation), given back unanswered.
          await this.store.releaseLine(b.id, line.index, this.claimer);
          return;
        }
        if (a.retryable) {
          this.pausedUntil = Date.now() + BACKOFF_MS;
          await this.store.releaseLine(b.id, line.index, this.claimer);
          return;
        }
        const output = {
          id: `batch_req_${randomBytes(12).toString('hex')}`,
          custom_id: line.customId,
          response: { status_code: a.status, request_id: `req_${randomBytes(12).toString('hex')}`, body: a.body },
          error: null,
        };
        await this.store.finishLine(b.id, { index: line.index, ok: a.status === 200, line: JSON.stringify(output) });
      })
      .catch((err: unknown) => {
        this.log.warn('batch line not recorded', {
          batch: b.id,
          line: line.index,
          error: err instanceof Error ? err.message : String(err),
        });
        this.giveBack.push({ batchId: b.id, index: line.index }); // answered again later, here or by another replica
      })
      .finally(() => {
        if (this.inflight.get(key) === entry) this.inflight.delete(key);
        this.nudge();
      });
  }

  /**
   * Writes the output file (answers with status 200) and the error file (the others; for a cancelled or expired
   * batch also every line never answered, with its reason), then the final state, if the batch is still `from`, with
   * request_counts of what the files hold.
   */
  private async finalize(batchId: string, from: BatchStatus, to: BatchStatus): Promise<void> {
    const b = await this.store.getBatch(batchId);
    if (b === undefined || b.status !== from) return;
    const created = nowSeconds();
    const files = {
      ok: new OutputFile(this.store, `file-${b.id}-output`, `batch_${b.id}_output.jsonl`),
      failed: new OutputFile(this.store, `file-${b.id}-errors`, `batch_${b.id}_error.jsonl`),
    };
    try {
      const written = { completed: 0, failed: 0 };
      for await (const r of this.store.results(b.id)) {
        await (r.ok ? files.ok : files.failed).write(r.line);
        written[r.ok ? 'completed' : 'failed']++;
      }
      if (to !== 'completed') {
        const ownerGone = b.errors?.find((e) => OWNER_GONE_CODES.includes(e.code));
        const code = to === 'expired' ? 'batch_expired' : (ownerGone?.code ?? 'batch_cancelled');
        const message =
          to === 'expired'
            ? 'This request could not be executed before the completion window expired.'
            : (ownerGone?.message ?? 'This request was not executed because the batch was cancelled.');
        for await (const l of this.store.unanswered(b.id))
          await files.failed.write(
            JSON.stringify({
              id: `batch_req_${randomBytes(12).toString('hex')}`,
              custom_id: l.customId,
              response: null,
              error: { code, message },
            }),
          );
      }
      const meta = { accountId: b.accountId, createdAt: created, expiresAt: created + this.o.ttlDays * DAY_S };
      const outputFileId = await files.ok.keep(meta);
      const errorFileId = await files.failed.keep(meta);
      const stamp =
        to === 'completed'
          ? { completedAt: created }
          : to === 'expired'
            ? { expiredAt: created }
            : { cancelledAt: created };
      // The counts of what the files hold: an answer another replica recorded after the results were read is in neither.
      await this.store.updateBatch(b.id, (c) =>
        c.status === from ? { ...c, status: to, outputFileId, errorFileId, ...written, ...stamp } : undefined,
      );
      await this.store.dropLines(b.id);
    } finally {
      files.ok.discard();
      files.failed.discard();
    }
  }

  /** Stops starting lines and cancels the ones in flight (they stay unanswered: claimed again after a restart). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const f of this.inflight.values()) {
      f.call?.cancel();
      await this.store.releaseLine(f.batchId, f.index, this.claimer).catch(() => {});
    }
    this.inflight.clear();
  }
}

/** A line answered by this process: its batch and index, and the running call (cancel() cuts it). */
interface InflightLine {
  batchId: string;
  index: number;
  call: DirectCall | null;
}

/** One output or error file being written: a scratch file, kept in the store only if it got a line. */
class OutputFile {
  private out: fs.WriteStream | null = null;
  private readonly path: string;
  private bytes = 0;

  constructor(
    private readonly store: BatchStore,
    readonly id: string,
    private readonly filename: string,
  ) {
    this.path = path.join(store.scratchDir, `output-${randomUUID()}`);
  }

  async write(line: string): Promise<void> {
    this.out ??= fs.createWriteStream(this.path, { mode: 0o600 });
    const data = `${line}\n`;
    this.bytes += Buffer.byteLength(data);
    if (!this.out.write(data)) await new Promise<void>((r) => this.out!.once('drain', () => r()));
  }

  /** Stores the file (same id each time: a finalization redone after a crash replaces it); null when empty. */
  async keep(meta: { accountId: string; createdAt: number; expiresAt: number }): Promise<string | null> {
    if (this.out === null) return null;
    const out = this.out;
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    this.out = null;
    await this.store.putFile(
      { id: this.id, filename: this.filename, purpose: 'batch_output', bytes: this.bytes, ...meta },
      this.path,
    );
    return this.id;
  }

  discard(): void {
    this.out?.destroy();
    fs.rm(this.path, { force: true }, () => {});
  }
}
