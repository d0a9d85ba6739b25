import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import {
  authenticatedRoutes,
  type AuthenticatedRouteDeps,
  presentedCredentials,
} from '../accounts/authenticated-route.ts';
import type { KeyAuthenticator } from '../accounts/authenticator.ts';
import type { KeyLimiting } from '../limits/key-limiter.ts';
import { echoed, invalidRequest, notFound } from '../errors/index.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { type CursorPage, cursorPage, pageLimit, pageOrder } from '../http/list-view.ts';
import type { Route } from '../http/router.ts';
import { DIRECT_URLS } from '../inference/direct-answer.ts';
import { readerKey } from '../inference/key-admission.ts';
import type { InferenceCaller } from '../inference/prompt-cache-scope.ts';
import { parseMetadata } from '../protocol/json-fields.ts';
import {
  batchObject,
  type BatchRecord,
  fileObject,
  type FileRecord,
  newBatchRecord,
  nowSeconds,
} from './batch-records.ts';
import type { BatchStore } from './batch-store.ts';
import { stageMultipartUpload } from './multipart-upload.ts';

export interface BatchRouteDeps {
  store: BatchStore;
  keys: KeyAuthenticator;
  limiter: KeyLimiting;
  /** Most bytes of an uploaded file (--batch-file-limit-bytes). */
  fileLimitBytes: number;
  /** Most lines of an uploaded file. */
  fileLineLimit: number;
  /** How long files and batches are kept (--batch-ttl-days). */
  ttlDays: number;
  bodyLimit: number;
  /** Called when a batch was made or cancelled: the runner looks at once, not at its next tick. */
  nudge: () => void;
}

const BASE = '/api/inference/v1';
const DAY_S = 86_400;
const WINDOW_S = 24 * 3_600;
export const fileNotFound = (id: string) => notFound(`No such File object: ${echoed(id)}`, 'file_not_found');
export const batchNotFound = (id: string) => notFound(`No such Batch object: ${echoed(id)}`, 'batch_not_found');
const newId = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;

/**
 * The Batch API's HTTP face (contract "Batch API"), on the shared endpoint's keys: files (`POST /files` multipart,
 * `GET /files`, `GET/DELETE /files/{id}`, `GET /files/{id}/content`) and batches (`POST /batches`, `GET /batches`,
 * `GET /batches/{id}`, `POST /batches/{id}/cancel`). Everything belongs to the caller's account: another account's
 * id is answered as an unknown one (404 file_not_found / batch_not_found). Reads take no request of the key's
 * per-minute limits, and neither does the work (BatchRunner). Main thread.
 */
export function batchRoutes(d: BatchRouteDeps): Route[] {
  const caller = (ex: HttpExchange): Promise<InferenceCaller> => Promise.resolve(readerKey(ex, d.keys, d.limiter));
  const ownFile = async (c: InferenceCaller, id: string): Promise<FileRecord> => {
    const f = await d.store.getFile(id);
    if (f === undefined || f.accountId !== c.accountId || f.expiresAt <= nowSeconds()) throw fileNotFound(id);
    return f;
  };
  const ownBatch = async (c: InferenceCaller, id: string): Promise<BatchRecord> => {
    const b = await d.store.getBatch(id);
    if (b === undefined || b.accountId !== c.accountId) throw batchNotFound(id);
    return b;
  };
  return [
    {
      method: 'POST',
      pattern: `${BASE}/files`,
      name: 'files',
      body: { kind: 'handler' },
      handler: async (ex) => {
        ex.holdBody(); // the key is checked first (it may be on its way from another replica)
        const c = await caller(ex);
        const staged = await stageMultipartUpload(ex, d.store.scratchDir, {
          fileBytes: d.fileLimitBytes,
          lines: d.fileLineLimit,
        });
        try {
          const purpose = staged.fields.get('purpose');
          if (purpose !== 'batch') throw invalidRequest("'purpose' must be 'batch'", 'purpose', 'invalid_value');
          const created = nowSeconds();
          const record: FileRecord = {
            id: newId('file-'),
            accountId: c.accountId,
            filename: staged.filename,
            purpose: 'batch',
            bytes: staged.bytes,
            createdAt: created,
            expiresAt: created + d.ttlDays * DAY_S,
          };
          await d.store.putFile(record, staged.path);
          ex.sendJson(200, fileObject(record));
        } finally {
          fs.rm(staged.path, { force: true }, () => {});
        }
      },
    },
    {
      method: 'GET',
      pattern: `${BASE}/files`,
      name: 'files',
      handler: async (ex) => {
        const { accountId } = await caller(ex);
        const query = filesQuery(new URLSearchParams(ex.query)); // a bad query is a 400 before any store read
        ex.sendJson(200, filesPage(await d.store.listFiles(accountId), query, nowSeconds()));
      },
    },
    {
      method: 'GET',
      pattern: `${BASE}/files/:id`,
      name: 'file',
      handler: async (ex) => ex.sendJson(200, fileObject(await ownFile(await caller(ex), ex.params[0]!))),
    },
    {
      method: 'DELETE',
      pattern: `${BASE}/files/:id`,
      name: 'file',
      handler: async (ex) => {
        const f = await ownFile(await caller(ex), ex.params[0]!);
        await d.store.deleteFile(f.id);
        ex.sendJson(200, { id: f.id, object: 'file', deleted: true });
      },
    },
    {
      method: 'GET',
      pattern: `${BASE}/files/:id/content`,
      name: 'file_content',
      handler: async (ex) => {
        const f = await ownFile(await caller(ex), ex.params[0]!);
        await streamFile(ex, d.store, f.id, f.filename);
      },
    },
    {
      method: 'POST',
      pattern: `${BASE}/batches`,
      name: 'batches',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: async (ex) => {
        const c = await caller(ex);
        const json = await ex.json();
        const input = validateCreateBatch(json);
        const file = await ownFile(c, input.inputFileId).catch(() => {
          throw invalidRequest(`No such File object: ${input.inputFileId}`, 'input_file_id', 'file_not_found');
        });
        if (file.purpose !== 'batch')
          throw invalidRequest("The input file's purpose must be 'batch'", 'input_file_id', 'invalid_value');
        const created = nowSeconds();
        const record = newBatchRecord({
          id: newId('batch_'),
          accountId: c.accountId,
          keyId: c.keyId,
          endpoint: input.endpoint,
          inputFileId: file.id,
          metadata: input.metadata,
          createdAt: created,
          expiresAt: created + WINDOW_S,
          keepUntil: created + d.ttlDays * DAY_S,
        });
        await d.store.createBatch(record);
        d.nudge();
        ex.sendJson(200, batchObject(record));
      },
    },
    {
      method: 'GET',
      pattern: `${BASE}/batches`,
      name: 'batches',
      handler: async (ex) => {
        const c = await caller(ex);
        const q = new URLSearchParams(ex.query);
        const after = q.get('after');
        const limit = pageLimit(q, 100);
        if (after !== null && (await d.store.getBatch(after))?.accountId !== c.accountId) throw unknownCursor('batch');
        const page = await d.store.listBatches(c.accountId, after, limit);
        ex.sendJson(200, cursorPage(page.data.map(batchObject), page.hasMore));
      },
    },
    {
      method: 'GET',
      pattern: `${BASE}/batches/:id`,
      name: 'batch',
      handler: async (ex) => ex.sendJson(200, batchObject(await ownBatch(await caller(ex), ex.params[0]!))),
    },
    {
      method: 'POST',
      pattern: `${BASE}/batches/:id/cancel`,
      name: 'batch_cancel',
      handler: async (ex) => {
        const own = await ownBatch(await caller(ex), ex.params[0]!);
        const now = nowSeconds();
        const next = await d.store.updateBatch(own.id, (b) =>
          b.status === 'validating' || b.status === 'in_progress'
            ? { ...b, status: 'cancelling', cancellingAt: now }
            : undefined,
        );
        if (next === undefined) {
          const current = (await d.store.getBatch(own.id)) ?? own;
          if (current.status !== 'cancelling' && current.status !== 'cancelled')
            throw invalidRequest(`A batch that is ${current.status} cannot be cancelled`, null, 'invalid_state');
          return ex.sendJson(200, batchObject(current));
        }
        d.nudge();
        ex.sendJson(200, batchObject(next));
      },
    },
  ];
}

/** What a files listing asks for: `purpose` (any when null), `order`, `after` (an id), `limit` (1-10,000, default 20). */
interface FilesQuery {
  purpose: string | null;
  order: 'asc' | 'desc';
  after: string | null;
  limit: number;
}

function filesQuery(q: URLSearchParams): FilesQuery {
  return { limit: pageLimit(q, 10_000), order: pageOrder(q), purpose: q.get('purpose'), after: q.get('after') };
}

/** One page of an account's files (newest first as the store lists them): those not expired at `now`, as `query` asks. */
function filesPage(files: FileRecord[], query: FilesQuery, now: number): CursorPage<Record<string, unknown>> {
  const { purpose, order, after, limit } = query;
  let live = files.filter((f) => f.expiresAt > now && (purpose === null || f.purpose === purpose));
  if (order === 'asc') live = live.reverse();
  if (after !== null) {
    const at = live.findIndex((f) => f.id === after);
    if (at < 0) throw unknownCursor('file');
    live = live.slice(at + 1);
  }
  return cursorPage(live.slice(0, limit).map(fileObject), live.length > limit);
}

/**
 * An `after` that names nothing of the account's (deleted meanwhile, never one, another account's): a 400, as the
 * Responses input items answer it; restarting from the top would repeat what the client has seen.
 */
function unknownCursor(what: 'file' | 'batch') {
  return invalidRequest(`'after' names no ${what} of this account (deleted, or never one)`, 'after', 'invalid_value');
}

interface CreateBatch {
  inputFileId: string;
  endpoint: string;
  metadata: Record<string, string> | null;
}

const CREATE_BATCH_FIELDS = ['input_file_id', 'endpoint', 'completion_window', 'metadata'];

function validateCreateBatch(json: unknown): CreateBatch {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw invalidRequest('The body must be a JSON object', null, 'invalid_body');
  const o = json as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!CREATE_BATCH_FIELDS.includes(key))
      throw invalidRequest(`Unrecognized request argument supplied: ${echoed(key)}`, echoed(key), 'unknown_parameter');
  }
  if (typeof o.input_file_id !== 'string' || o.input_file_id === '')
    throw invalidRequest("'input_file_id' is required (a string)", 'input_file_id', 'missing_required_parameter');
  if (typeof o.endpoint !== 'string' || !(DIRECT_URLS as readonly string[]).includes(o.endpoint))
    throw invalidRequest(`'endpoint' must be one of ${DIRECT_URLS.join(', ')}`, 'endpoint', 'invalid_value');
  if (o.completion_window !== '24h')
    throw invalidRequest("'completion_window' must be '24h'", 'completion_window', 'invalid_value');
  return { inputFileId: o.input_file_id, endpoint: o.endpoint, metadata: parseMetadata(o.metadata) };
}

export interface BatchDashboardRouteDeps extends AuthenticatedRouteDeps {
  store: BatchStore;
}

/**
 * The dashboard's view of the Batch API under /api/v1 (a session or an account key, as every management route):
 * `GET /api/v1/batches`, the account's latest 100 batches as OpenAI's Batch objects, and
 * `GET /api/v1/batches/{id}/output`, the batch's output file streamed as a download (404 batch_not_found for another
 * account's batch; 404 file_not_found while it has none).
 */
export function batchDashboardRoutes(d: BatchDashboardRouteDeps): Route[] {
  const { route, ok } = authenticatedRoutes(d);
  return [
    route('GET', '/api/v1/batches', 'dashboard_batches', false, async (c) =>
      ok({ data: (await d.store.listBatches(c.accountId, null, 100)).data.map(batchObject) }),
    ),
    {
      method: 'GET',
      pattern: '/api/v1/batches/:id/output',
      name: 'dashboard_batch_output',
      handler: async (ex) => {
        const principal = await d.auth.authenticateFresh(presentedCredentials(ex, d.session));
        const id = ex.params[0]!;
        const b = await d.store.getBatch(id);
        if (b === undefined || b.accountId !== principal.accountId) throw batchNotFound(id);
        if (b.outputFileId === null) throw fileNotFound(`${id} output`);
        await streamFile(ex, d.store, b.outputFileId, `${b.id}_output.jsonl`);
      },
    },
  ];
}

/** Streams a stored file as a JSONL download, waiting for the client to drain each chunk. */
/**
 * `attachment` with the stored name: an ASCII `filename` (anything else, quotes, backslashes and controls as `_`)
 * and, when the name is not plain ASCII, RFC 5987's `filename*` in UTF-8. A header value must be ASCII text: a raw
 * NUL or UTF-8 byte there made the download unreadable (clients refuse the header).
 */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (ascii === filename) return `attachment; filename="${ascii}"`;
  const printable = filename.replace(/[\u0000-\u001f\u007f]/g, '_').replace(/\p{Surrogate}/gu, '\ufffd');
  const encoded = encodeURIComponent(printable).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

async function streamFile(ex: HttpExchange, store: BatchStore, fileId: string, filename: string): Promise<void> {
  const headers = [
    ['content-type', 'application/jsonl'],
    ['content-disposition', contentDisposition(filename)],
  ] as const;
  let sent = false;
  for await (const chunk of store.readFile(fileId)) {
    if (ex.closed) return;
    sent = true;
    if (!ex.writeChunk(chunk, 200, headers)) await ex.waitWritable();
  }
  ex.endStream('', sent ? [] : headers);
}
