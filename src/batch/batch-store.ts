import type { BatchLine, BatchRecord, FileRecord, LineResult } from './batch-records.ts';

/**
 * Where the Batch API keeps files, batches and their lines: LmdbBatchStore on one node (the data dir),
 * PostgresBatchStore in a fleet (the database every replica reads). Main thread.
 *
 * Contract:
 * - Files: `putFile` takes a finished local file (the upload was streamed to it) and keeps its bytes where the
 *   records live; `readFile` streams them back in chunks. Never a whole file in memory.
 * - Batches: `updateBatch(id, fn)` is atomic (check-then-write): `fn` sees the current record and returns the next
 *   one, or undefined for no change. On PostgreSQL it runs under the row's lock, so one replica wins a transition.
 * - Lines: `addLines` is idempotent (a validation restarted after a crash writes the same lines again).
 *   `claimLines` hands out lines nobody has answered and nobody holds (a claim lives `claimMs`, renewed by
 *   `renewClaims`; a claim of a process that died lapses, and its lines are handed out again). `finishLine`
 *   records an answer once: the first wins, counted in the batch's request_counts in the same transaction; a
 *   second answer for the same line (a lapsed claim answered late) is dropped and returns false, and so is an answer
 *   for a batch past ANSWERING_STATES (another replica ended it: cancelled, expired, its owner gone). So a line is
 *   answered at most once in the output, whatever crashed, and a final batch's counts never change.
 */
export interface BatchStore {
  /** A folder on this machine where uploads are staged before putFile (on the data dir's file system). */
  readonly scratchDir: string;
  putFile(meta: FileRecord, localPath: string): Promise<void>;
  getFile(id: string): Promise<FileRecord | undefined>;
  /** The account's files, newest first. */
  listFiles(accountId: string): Promise<FileRecord[]>;
  readFile(id: string): AsyncIterable<Buffer>;
  deleteFile(id: string): Promise<boolean>;

  createBatch(b: BatchRecord): Promise<void>;
  getBatch(id: string): Promise<BatchRecord | undefined>;
  /** The account's batches, newest first: at most `limit` after the batch `after` (exclusive). */
  listBatches(
    accountId: string,
    after: string | null,
    limit: number,
  ): Promise<{ data: BatchRecord[]; hasMore: boolean }>;
  updateBatch(id: string, fn: (b: BatchRecord) => BatchRecord | undefined): Promise<BatchRecord | undefined>;
  /** Ids of the batches in an ACTIVE_STATES state. */
  activeBatchIds(): Promise<string[]>;

  addLines(batchId: string, lines: BatchLine[]): Promise<void>;
  claimLines(batchId: string, claimer: string, max: number): Promise<BatchLine[]>;
  renewClaims(claimer: string): Promise<void>;
  /** Gives a claimed line back unanswered (retry later, or this process stops). */
  releaseLine(batchId: string, index: number, claimer: string): Promise<void>;
  finishLine(batchId: string, result: LineResult): Promise<boolean>;
  /** Lines not answered yet, of the batch. */
  openLineCount(batchId: string): Promise<number>;
  /** Every answered line, in line order. */
  results(batchId: string): AsyncIterable<LineResult>;
  /** Lines never answered, in line order (for a cancelled or expired batch's error file). */
  unanswered(batchId: string): AsyncIterable<BatchLine>;
  /** Removes the batch's lines (its output is written). */
  dropLines(batchId: string): Promise<void>;

  /** Removes files and batches past their keep time; returns how many records went. */
  sweep(nowSeconds: number): Promise<number>;
  close(): Promise<void>;
}
