/**
 * The Batch API's records (contract "Batch API"), as both batch stores keep them. Times are Unix seconds, as
 * OpenAI's objects carry them. Plain JSON only.
 */

export type FilePurpose = 'batch' | 'batch_output';

export interface FileRecord {
  id: string;
  accountId: string;
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  createdAt: number;
  expiresAt: number;
}

export type BatchStatus =
  'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** The states a batch is still worked on in (the runner's business); every other state is final. */
export const ACTIVE_STATES: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];

/** The states a line's answer is still recorded in (BatchStore.finishLine): later, the batch's files are written. */
export const ANSWERING_STATES: readonly BatchStatus[] = ['in_progress', 'cancelling'];

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  /** 1-based line of the input file. */
  line: number | null;
}

export interface BatchRecord {
  id: string;
  accountId: string;
  /** The key that made it: its lines run in that key's prompt-cache partition. */
  keyId: string;
  endpoint: string;
  inputFileId: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
  status: BatchStatus;
  errors: BatchError[] | null;
  outputFileId: string | null;
  errorFileId: string | null;
  total: number;
  completed: number;
  failed: number;
  createdAt: number;
  /** Milliseconds since the epoch, strictly increasing per process: the listing order (newest first). */
  order: number;
  /** When the completion window ends (OpenAI's `expires_at` of a batch). */
  expiresAt: number;
  /** When the records go (--batch-ttl-days after creation). */
  keepUntil: number;
  inProgressAt: number | null;
  finalizingAt: number | null;
  completedAt: number | null;
  failedAt: number | null;
  expiredAt: number | null;
  cancellingAt: number | null;
  cancelledAt: number | null;
}

/** One input line as validated: its 0-based index, custom_id and request body (JSON text). */
export interface BatchLine {
  index: number;
  customId: string;
  body: string;
}

/** One answered line: its output-file line (JSON text), and whether it goes to the output (200) or the error file. */
export interface LineResult {
  index: number;
  ok: boolean;
  line: string;
}

let lastOrder = 0;
/** The next listing order value: now in milliseconds, past the last one handed out here. */
export function nextOrder(): number {
  lastOrder = Math.max(Date.now(), lastOrder + 1);
  return lastOrder;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** What a new batch is made of; the rest starts empty (no errors, files, counts or state times). */
export type NewBatch = Pick<
  BatchRecord,
  'id' | 'accountId' | 'keyId' | 'endpoint' | 'inputFileId' | 'metadata' | 'createdAt' | 'expiresAt' | 'keepUntil'
> &
  Partial<Pick<BatchRecord, 'status' | 'total'>>;

/** A new batch record (POST /batches): `validating` unless `status` says otherwise, a 24h window, the next order. */
export function newBatchRecord(b: NewBatch): BatchRecord {
  return {
    completionWindow: '24h',
    status: 'validating',
    errors: null,
    outputFileId: null,
    errorFileId: null,
    total: 0,
    completed: 0,
    failed: 0,
    order: nextOrder(),
    inProgressAt: null,
    finalizingAt: null,
    completedAt: null,
    failedAt: null,
    expiredAt: null,
    cancellingAt: null,
    cancelledAt: null,
    ...b,
  };
}

/** OpenAI's File object. */
export function fileObject(f: FileRecord): Record<string, unknown> {
  return {
    id: f.id,
    object: 'file',
    bytes: f.bytes,
    created_at: f.createdAt,
    expires_at: f.expiresAt,
    filename: f.filename,
    purpose: f.purpose,
    status: 'processed',
    status_details: null,
  };
}

/** OpenAI's Batch object. */
export function batchObject(b: BatchRecord): Record<string, unknown> {
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    errors: b.errors === null ? null : { object: 'list', data: b.errors },
    input_file_id: b.inputFileId,
    completion_window: b.completionWindow,
    status: b.status,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    created_at: b.createdAt,
    in_progress_at: b.inProgressAt,
    expires_at: b.expiresAt,
    finalizing_at: b.finalizingAt,
    completed_at: b.completedAt,
    failed_at: b.failedAt,
    expired_at: b.expiredAt,
    cancelling_at: b.cancellingAt,
    cancelled_at: b.cancelledAt,
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    metadata: b.metadata,
  };
}
