import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import {
  ACTIVE_STATES,
  ANSWERING_STATES,
  type BatchLine,
  type BatchRecord,
  type FileRecord,
  type LineResult,
} from './batch-records.ts';
import type { BatchStore } from './batch-store.ts';

/** One stored input line, and its answer once it has one. */
interface LineValue {
  customId: string;
  body: string;
  result?: { ok: boolean; line: string };
}

type LineKey = [string, number];

const CHUNK = 1 << 20;

/**
 * The BatchStore of one node: file bytes as files under `<dataDir>/batch-files/` (written to a scratch file, fsynced,
 * then renamed into place: a file is whole or absent), the records in an LMDB environment of their own,
 * `<dataDir>/batches` (files, batches, lines by [batchId, index], and an index of each account's files and batches by
 * creation time). Its own environment, not the records store: 50,000 lines of a batch are no account records, and the
 * records store is mirrored whole in a fleet's memory.
 *
 * Claims are in this process's memory: one server works on a data dir, and a restart starts with none, so every line
 * without an answer is handed out again (an answer is one LMDB transaction: there or not). Answers are durable when
 * finishLine resolves.
 */
export class LmdbBatchStore implements BatchStore {
  readonly scratchDir: string;
  private readonly filesDir: string;
  private readonly root: RootDatabase;
  private readonly files: Database<FileRecord, string>;
  private readonly batches: Database<BatchRecord, string>;
  private readonly lines: Database<LineValue, LineKey>;
  /** [kind ('file' | 'batch'), accountId, createdAt, id] -> true. */
  private readonly byAccount: Database<true, (string | number)[]>;
  /** Claimed lines, `batchId index` -> claimer; and per batch the next index never handed out since start. */
  private readonly claims = new Map<string, string>();
  private readonly cursors = new Map<string, number>();
  private readonly returned = new Map<string, number[]>();

  constructor(dataDir: string) {
    this.filesDir = path.join(dataDir, 'batch-files');
    this.scratchDir = path.join(this.filesDir, 'scratch');
    fs.mkdirSync(this.scratchDir, { recursive: true, mode: 0o700 });
    for (const stale of fs.readdirSync(this.scratchDir)) fs.rmSync(path.join(this.scratchDir, stale), { force: true }); // uploads cut by a crash
    const dir = path.join(dataDir, 'batches');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.root = open({ path: dir, maxDbs: 8, compression: false });
    this.files = this.root.openDB({ name: 'files' });
    this.batches = this.root.openDB({ name: 'batches' });
    this.lines = this.root.openDB({ name: 'lines' });
    this.byAccount = this.root.openDB({ name: 'by-account' });
  }

  private filePath(id: string): string {
    return path.join(this.filesDir, `${id}.jsonl`);
  }

  async putFile(meta: FileRecord, localPath: string): Promise<void> {
    const fd = fs.openSync(localPath, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(localPath, this.filePath(meta.id));
    await this.root.transaction(() => {
      const old = this.files.get(meta.id); // a finalization redone after a crash writes its file again
      if (old !== undefined) this.byAccount.remove(['file', old.accountId, old.createdAt, old.id]);
      this.files.put(meta.id, meta);
      this.byAccount.put(['file', meta.accountId, meta.createdAt, meta.id], true);
    });
  }

  async getFile(id: string): Promise<FileRecord | undefined> {
    return this.files.get(id);
  }

  async listFiles(accountId: string): Promise<FileRecord[]> {
    const out: FileRecord[] = [];
    for (const key of this.byAccount.getKeys({
      start: ['file', accountId, Infinity],
      end: ['file', accountId, -1],
      reverse: true,
    })) {
      const f = this.files.get(key[3] as string);
      if (f !== undefined) out.push(f);
    }
    return out;
  }

  async *readFile(id: string): AsyncIterable<Buffer> {
    yield* fs.createReadStream(this.filePath(id), { highWaterMark: CHUNK }) as AsyncIterable<Buffer>;
  }

  async deleteFile(id: string): Promise<boolean> {
    const f = this.files.get(id);
    if (f === undefined) return false;
    await this.root.transaction(() => {
      this.files.remove(id);
      this.byAccount.remove(['file', f.accountId, f.createdAt, f.id]);
    });
    fs.rmSync(this.filePath(id), { force: true });
    return true;
  }

  async createBatch(b: BatchRecord): Promise<void> {
    await this.root.transaction(() => {
      this.batches.put(b.id, b);
      this.byAccount.put(['batch', b.accountId, b.order, b.id], true);
    });
  }

  async getBatch(id: string): Promise<BatchRecord | undefined> {
    return this.batches.get(id);
  }

  async listBatches(
    accountId: string,
    after: string | null,
    limit: number,
  ): Promise<{ data: BatchRecord[]; hasMore: boolean }> {
    let start: (string | number)[] = ['batch', accountId, Infinity];
    let skip: string | null = null;
    if (after !== null) {
      const a = this.batches.get(after);
      if (a === undefined || a.accountId !== accountId) return { data: [], hasMore: false };
      start = ['batch', accountId, a.order, a.id];
      skip = a.id;
    }
    const data: BatchRecord[] = [];
    for (const key of this.byAccount.getKeys({ start, end: ['batch', accountId, -1], reverse: true })) {
      if (key[3] === skip) continue;
      const b = this.batches.get(key[3] as string);
      if (b === undefined) continue;
      if (data.length === limit) return { data, hasMore: true };
      data.push(b);
    }
    return { data, hasMore: false };
  }

  updateBatch(id: string, fn: (b: BatchRecord) => BatchRecord | undefined): Promise<BatchRecord | undefined> {
    return this.root.transaction(() => {
      const b = this.batches.get(id);
      if (b === undefined) return undefined;
      const next = fn(b);
      if (next !== undefined) this.batches.put(id, next);
      return next;
    });
  }

  async activeBatchIds(): Promise<string[]> {
    const out: string[] = [];
    for (const { key, value } of this.batches.getRange()) if (ACTIVE_STATES.includes(value.status)) out.push(key);
    return out;
  }

  async addLines(batchId: string, lines: BatchLine[]): Promise<void> {
    await this.root.transaction(() => {
      for (const l of lines)
        if (this.lines.get([batchId, l.index]) === undefined)
          this.lines.put([batchId, l.index], { customId: l.customId, body: l.body });
    });
  }

  async claimLines(batchId: string, claimer: string, max: number): Promise<BatchLine[]> {
    const out: BatchLine[] = [];
    const take = (index: number, v: LineValue) => {
      this.claims.set(`${batchId} ${index}`, claimer);
      out.push({ index, customId: v.customId, body: v.body });
    };
    const returned = this.returned.get(batchId) ?? [];
    while (out.length < max && returned.length > 0) {
      const index = returned.shift()!;
      const v = this.lines.get([batchId, index]);
      if (v !== undefined && v.result === undefined && !this.claims.has(`${batchId} ${index}`)) take(index, v);
    }
    if (out.length >= max) return out;
    const from = this.cursors.get(batchId) ?? 0;
    let next = from;
    for (const { key, value } of this.lines.getRange({
      start: [batchId, from],
      end: [batchId, Number.MAX_SAFE_INTEGER],
    })) {
      next = key[1] + 1;
      if (value.result === undefined && !this.claims.has(`${batchId} ${key[1]}`)) take(key[1], value);
      if (out.length >= max) break;
    }
    this.cursors.set(batchId, next);
    return out;
  }

  async renewClaims(): Promise<void> {} // claims live as long as this process

  async releaseLine(batchId: string, index: number, _claimer?: string): Promise<void> {
    this.claims.delete(`${batchId} ${index}`);
    const list = this.returned.get(batchId) ?? [];
    list.push(index);
    this.returned.set(batchId, list);
  }

  finishLine(batchId: string, result: LineResult): Promise<boolean> {
    this.claims.delete(`${batchId} ${result.index}`);
    return this.root.transaction(() => {
      const v = this.lines.get([batchId, result.index]);
      const b = this.batches.get(batchId);
      if (v === undefined || v.result !== undefined || b === undefined || !ANSWERING_STATES.includes(b.status))
        return false;
      this.lines.put([batchId, result.index], { ...v, result: { ok: result.ok, line: result.line } });
      this.batches.put(batchId, {
        ...b,
        completed: b.completed + (result.ok ? 1 : 0),
        failed: b.failed + (result.ok ? 0 : 1),
      });
      return true;
    });
  }

  async openLineCount(batchId: string): Promise<number> {
    let n = 0;
    for (const { value } of this.lines.getRange({ start: [batchId, 0], end: [batchId, Number.MAX_SAFE_INTEGER] }))
      if (value.result === undefined) n++;
    return n;
  }

  async *results(batchId: string): AsyncIterable<LineResult> {
    for (const { key, value } of this.lines.getRange({
      start: [batchId, 0],
      end: [batchId, Number.MAX_SAFE_INTEGER],
    })) {
      if (value.result !== undefined) yield { index: key[1], ok: value.result.ok, line: value.result.line };
    }
  }

  async *unanswered(batchId: string): AsyncIterable<BatchLine> {
    for (const { key, value } of this.lines.getRange({
      start: [batchId, 0],
      end: [batchId, Number.MAX_SAFE_INTEGER],
    })) {
      if (value.result === undefined) yield { index: key[1], customId: value.customId, body: value.body };
    }
  }

  async dropLines(batchId: string): Promise<void> {
    const keys = [...this.lines.getKeys({ start: [batchId, 0], end: [batchId, Number.MAX_SAFE_INTEGER] })];
    for (let i = 0; i < keys.length; i += 5000) {
      await this.root.transaction(() => {
        for (const k of keys.slice(i, i + 5000)) this.lines.remove(k);
      });
    }
    this.cursors.delete(batchId);
    this.returned.delete(batchId);
  }

  async sweep(now: number): Promise<number> {
    let n = 0;
    for (const { value: b } of [...this.batches.getRange()]) {
      if (b.keepUntil > now || ACTIVE_STATES.includes(b.status)) continue;
      await this.dropLines(b.id);
      await this.root.transaction(() => {
        this.batches.remove(b.id);
        this.byAccount.remove(['batch', b.accountId, b.order, b.id]);
      });
      n++;
    }
    for (const { value: f } of [...this.files.getRange()]) {
      if (f.expiresAt > now) continue;
      if (await this.deleteFile(f.id)) n++;
    }
    return n;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
