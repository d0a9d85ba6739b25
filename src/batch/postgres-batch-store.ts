import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../log/logger.ts';
import {
  ACTIVE_STATES,
  ANSWERING_STATES,
  type BatchLine,
  type BatchRecord,
  type BatchStatus,
  type FileRecord,
  type LineResult,
} from './batch-records.ts';
import type { BatchStore } from './batch-store.ts';

const CHUNK = 1 << 20;
/** A claim lapses this long after its last renewal (the runner renews every tick, 1 s). */
const CLAIM_TTL = "interval '30 seconds'";
const PAGE = 1000;

/**
 * The BatchStore of a fleet: PostgreSQL tables of migration 0003 (batch_files + batch_file_chunks, batches,
 * batch_lines), over a small pool of its own. File bytes are 1 MiB bytea rows (batch_file_chunks) rather than large
 * objects: every replica reads them with plain queries, a DELETE removes them (no lo_unlink to forget), and they are in
 * every dump; a file is written in one transaction (whole or absent) and read back one chunk per query.
 * Lines are claimed with `FOR UPDATE SKIP LOCKED` (two replicas never take the same line), the claim lapses 30 s after
 * its replica stopped renewing it (a dead replica's lines are taken again), and `finishLine` records the first answer
 * only (`result IS NULL`), counting it in the batch in the same transaction.
 */
export class PostgresBatchStore implements BatchStore {
  private constructor(
    private readonly pool: pg.Pool,
    readonly scratchDir: string,
  ) {}

  static async open(url: string, dataDir: string, log: Logger): Promise<PostgresBatchStore> {
    // A replica frozen inside a transaction (a stopped VM, SIGSTOP) must not hold a batch's row for the fleet: the
    // database ends such a transaction after 5 s (its writes undone; the line's claim lapses and another answers it).
    const pool = new pg.Pool({
      connectionString: url,
      max: 4,
      connectionTimeoutMillis: 5_000,
      query_timeout: 30_000,
      idleTimeoutMillis: 30_000,
      allowExitOnIdle: true,
      options: '-c idle_in_transaction_session_timeout=5000',
    });
    pool.on('error', (err) => log.warn('batch store: a database connection failed', { error: err.message }));
    const scratch = path.join(dataDir, 'batch-files', 'scratch');
    fs.mkdirSync(scratch, { recursive: true, mode: 0o700 });
    return new PostgresBatchStore(pool, scratch);
  }

  /**
   * Runs `fn` in a transaction on a client of its own. A checked-out client has no 'error' listener of the pool's: a
   * connection the database ends meanwhile (the 5 s idle-in-transaction limit of a frozen replica, a restart) would
   * be an unhandled 'error' event that ends the process. It is caught here, fails the transaction, and the client is
   * dropped, not reused.
   */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    let lost: Error | undefined;
    const onLost = (err: Error) => {
      lost = err;
    };
    c.on('error', onLost);
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      c.off('error', onLost);
      c.release(lost);
    }
  }

  async putFile(meta: FileRecord, localPath: string): Promise<void> {
    await this.tx(async (c) => {
      await c.query('DELETE FROM batch_file_chunks WHERE file_id = $1', [meta.id]);
      let seq = 0;
      for await (const chunk of fs.createReadStream(localPath, { highWaterMark: CHUNK }) as AsyncIterable<Buffer>) {
        await c.query('INSERT INTO batch_file_chunks (file_id, seq, data) VALUES ($1, $2, $3)', [
          meta.id,
          seq++,
          chunk,
        ]);
      }
      await c.query(
        'INSERT INTO batch_files (id, account_id, created_at, expires_at, record) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, record = EXCLUDED.record',
        [meta.id, meta.accountId, meta.createdAt, meta.expiresAt, meta],
      );
    });
    fs.rm(localPath, { force: true }, () => {});
  }

  async getFile(id: string): Promise<FileRecord | undefined> {
    return (await this.pool.query<{ record: FileRecord }>('SELECT record FROM batch_files WHERE id = $1', [id])).rows[0]
      ?.record;
  }

  async listFiles(accountId: string): Promise<FileRecord[]> {
    return (
      await this.pool.query<{ record: FileRecord }>(
        'SELECT record FROM batch_files WHERE account_id = $1 ORDER BY created_at DESC, id DESC',
        [accountId],
      )
    ).rows.map((r) => r.record);
  }

  async *readFile(id: string): AsyncIterable<Buffer> {
    for (let seq = 0; ; seq++) {
      const row = (
        await this.pool.query<{ data: Buffer }>('SELECT data FROM batch_file_chunks WHERE file_id = $1 AND seq = $2', [
          id,
          seq,
        ])
      ).rows[0];
      if (row === undefined) return;
      yield row.data;
    }
  }

  async deleteFile(id: string): Promise<boolean> {
    return this.tx(async (c) => {
      await c.query('DELETE FROM batch_file_chunks WHERE file_id = $1', [id]);
      return ((await c.query('DELETE FROM batch_files WHERE id = $1', [id])).rowCount ?? 0) > 0;
    });
  }

  async createBatch(b: BatchRecord): Promise<void> {
    await this.pool.query(
      'INSERT INTO batches (id, account_id, status, created_at, record) VALUES ($1, $2, $3, $4, $5)',
      [b.id, b.accountId, b.status, b.order, b],
    );
  }

  async getBatch(id: string): Promise<BatchRecord | undefined> {
    return (await this.pool.query<{ record: BatchRecord }>('SELECT record FROM batches WHERE id = $1', [id])).rows[0]
      ?.record;
  }

  async listBatches(
    accountId: string,
    after: string | null,
    limit: number,
  ): Promise<{ data: BatchRecord[]; hasMore: boolean }> {
    const rows =
      after === null
        ? await this.pool.query<{ record: BatchRecord }>(
            'SELECT record FROM batches WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2',
            [accountId, limit + 1],
          )
        : await this.pool.query<{ record: BatchRecord }>(
            'SELECT b.record FROM batches b, batches a WHERE a.id = $2 AND a.account_id = $1 AND b.account_id = $1 AND (b.created_at, b.id) < (a.created_at, a.id) ORDER BY b.created_at DESC, b.id DESC LIMIT $3',
            [accountId, after, limit + 1],
          );
    const data = rows.rows.map((r) => r.record);
    return { data: data.slice(0, limit), hasMore: data.length > limit };
  }

  updateBatch(id: string, fn: (b: BatchRecord) => BatchRecord | undefined): Promise<BatchRecord | undefined> {
    return this.tx(async (c) => {
      const b = (await c.query<{ record: BatchRecord }>('SELECT record FROM batches WHERE id = $1 FOR UPDATE', [id]))
        .rows[0]?.record;
      if (b === undefined) return undefined;
      const next = fn(b);
      if (next !== undefined)
        await c.query('UPDATE batches SET status = $2, record = $3 WHERE id = $1', [id, next.status, next]);
      return next;
    });
  }

  async activeBatchIds(): Promise<string[]> {
    return (
      await this.pool.query<{ id: string }>('SELECT id FROM batches WHERE status = ANY($1) ORDER BY created_at', [
        ACTIVE_STATES,
      ])
    ).rows.map((r) => r.id);
  }

  async addLines(batchId: string, lines: BatchLine[]): Promise<void> {
    await this.pool.query(
      'INSERT INTO batch_lines (batch_id, idx, custom_id, body) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[]) ON CONFLICT DO NOTHING',
      [batchId, lines.map((l) => l.index), lines.map((l) => l.customId), lines.map((l) => l.body)],
    );
  }

  async claimLines(batchId: string, claimer: string, max: number): Promise<BatchLine[]> {
    const rows = await this.pool.query<{ idx: number; custom_id: string; body: string }>(
      `UPDATE batch_lines SET claimed_by = $2, claim_expires = clock_timestamp() + ${CLAIM_TTL}
       WHERE (batch_id, idx) IN (
         SELECT batch_id, idx FROM batch_lines
         WHERE batch_id = $1 AND result IS NULL AND (claimed_by IS NULL OR claim_expires < clock_timestamp())
         ORDER BY idx LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING idx, custom_id, body`,
      [batchId, claimer, max],
    );
    return rows.rows
      .map((r) => ({ index: r.idx, customId: r.custom_id, body: r.body }))
      .sort((a, b) => a.index - b.index);
  }

  async renewClaims(claimer: string): Promise<void> {
    await this.pool.query(
      `UPDATE batch_lines SET claim_expires = clock_timestamp() + ${CLAIM_TTL} WHERE claimed_by = $1 AND result IS NULL`,
      [claimer],
    );
  }

  async releaseLine(batchId: string, index: number, claimer: string): Promise<void> {
    await this.pool.query(
      'UPDATE batch_lines SET claimed_by = NULL, claim_expires = NULL WHERE batch_id = $1 AND idx = $2 AND claimed_by = $3 AND result IS NULL',
      [batchId, index, claimer],
    );
  }

  finishLine(batchId: string, result: LineResult): Promise<boolean> {
    return this.tx(async (c) => {
      // The batch's row lock first (as updateBatch takes it): an answer after its final transition is dropped.
      const status = (
        await c.query<{ status: BatchStatus }>('SELECT status FROM batches WHERE id = $1 FOR UPDATE', [batchId])
      ).rows[0]?.status;
      if (status === undefined || !ANSWERING_STATES.includes(status)) return false;
      const done = await c.query(
        'UPDATE batch_lines SET result = $3, ok = $4, claimed_by = NULL, claim_expires = NULL WHERE batch_id = $1 AND idx = $2 AND result IS NULL',
        [batchId, result.index, result.line, result.ok],
      );
      if ((done.rowCount ?? 0) === 0) return false;
      const field = result.ok ? 'completed' : 'failed';
      await c.query(
        `UPDATE batches SET record = jsonb_set(record, '{${field}}', to_jsonb((record->>'${field}')::int + 1)) WHERE id = $1`,
        [batchId],
      );
      return true;
    });
  }

  async openLineCount(batchId: string): Promise<number> {
    return Number(
      (
        await this.pool.query<{ n: string }>(
          'SELECT count(*) AS n FROM batch_lines WHERE batch_id = $1 AND result IS NULL',
          [batchId],
        )
      ).rows[0]!.n,
    );
  }

  async *results(batchId: string): AsyncIterable<LineResult> {
    const lines = this.linesByIdx<{ idx: number; ok: boolean; result: string }>(
      'SELECT idx, ok, result FROM batch_lines WHERE batch_id = $1 AND idx >= $2 AND result IS NOT NULL ORDER BY idx LIMIT $3',
      batchId,
    );
    for await (const r of lines) yield { index: r.idx, ok: r.ok, line: r.result };
  }

  async *unanswered(batchId: string): AsyncIterable<BatchLine> {
    const lines = this.linesByIdx<{ idx: number; custom_id: string; body: string }>(
      'SELECT idx, custom_id, body FROM batch_lines WHERE batch_id = $1 AND idx >= $2 AND result IS NULL ORDER BY idx LIMIT $3',
      batchId,
    );
    for await (const r of lines) yield { index: r.idx, customId: r.custom_id, body: r.body };
  }

  /**
   * The rows `sql` selects of a batch's lines, a page (PAGE rows) a query as the caller reads on: `sql` takes the
   * batch id ($1), the first idx ($2) and the page size ($3), and orders by idx.
   */
  private async *linesByIdx<R extends { idx: number }>(sql: string, batchId: string): AsyncIterable<R> {
    for (let from = 0; ;) {
      const rows = (await this.pool.query<R>(sql, [batchId, from, PAGE])).rows;
      yield* rows;
      if (rows.length < PAGE) return;
      from = rows.at(-1)!.idx + 1;
    }
  }

  async dropLines(batchId: string): Promise<void> {
    await this.pool.query('DELETE FROM batch_lines WHERE batch_id = $1', [batchId]);
  }

  async sweep(now: number): Promise<number> {
    const gone = await this.pool.query<{ id: string }>(
      "DELETE FROM batches WHERE status <> ALL($1) AND (record->>'keepUntil')::bigint <= $2 RETURNING id",
      [ACTIVE_STATES, now],
    );
    for (const { id } of gone.rows) await this.dropLines(id);
    const files = await this.pool.query<{ id: string }>('SELECT id FROM batch_files WHERE expires_at <= $1', [now]);
    for (const { id } of files.rows) await this.deleteFile(id);
    return gone.rows.length + files.rows.length;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}
