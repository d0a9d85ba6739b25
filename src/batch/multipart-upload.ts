import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { invalidRequest, payloadTooLarge } from '../errors/index.ts';
import type { HttpExchange } from '../http/http-exchange.ts';

/** What a multipart upload left: its file part, staged on disk, and its small text fields. */
export interface StagedUpload {
  /** The file part's bytes, in a scratch file the caller moves or removes. */
  path: string;
  filename: string;
  bytes: number;
  /** Lines of the file (a last line without a newline counts). */
  lines: number;
  fields: Map<string, string>;
}

export interface UploadLimits {
  /** Most bytes of the file part (413 past it). */
  fileBytes: number;
  /** Most lines of the file part (400 past it). */
  lines: number;
}

const HEADER_LIMIT = 16 << 10;
const FIELD_LIMIT = 4 << 10;

/**
 * Streams a `multipart/form-data` body (the route declares `body: {kind: 'handler'}`; call after holdBody or
 * synchronously) into `scratchDir`: the part named `file` to a scratch file as it arrives (the socket paused while
 * the disk catches up: never the whole upload in memory), the other parts as short text fields. 400 for a body that
 * is not multipart, a malformed one, no file part, or too many lines; 413 for a file over the limit (declared: at
 * once). The scratch file is removed on every failure. Main thread.
 */
export function stageMultipartUpload(
  ex: HttpExchange,
  scratchDir: string,
  limits: UploadLimits,
): Promise<StagedUpload> {
  const type = ex.header('content-type') ?? '';
  const m = /^multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(type);
  if (m === null)
    return Promise.reject(
      invalidRequest("The body must be multipart/form-data with a 'file' part", 'file', 'invalid_content_type'),
    );
  if (!ex.hasBody) return Promise.reject(invalidRequest("The upload has no 'file' part", 'file', 'missing_file'));
  const declared = ex.contentLength;
  if (declared !== undefined && declared > limits.fileBytes + HEADER_LIMIT * 4)
    return Promise.reject(payloadTooLarge(limits.fileBytes));
  const parser = new MultipartParser((m[1] ?? m[2])!, scratchDir, limits, ex);
  return parser.done;
}

type State = 'preamble' | 'delimiter' | 'headers' | 'body' | 'end';

class MultipartParser {
  readonly done: Promise<StagedUpload>;
  private resolve!: (u: StagedUpload) => void;
  private reject!: (e: unknown) => void;
  private readonly delimiter: Buffer;
  private pending: Buffer = Buffer.from('\r\n'); // the first boundary then looks like every other
  private state: State = 'preamble';
  private failed = false;
  private part: { name: string; filename: string | null; text: string } | null = null;
  private file: { path: string; out: fs.WriteStream; filename: string } | null = null;
  private bytes = 0;
  private newlines = 0;
  private lastByte = -1;
  private readonly fields = new Map<string, string>();
  private writing = Promise.resolve();

  constructor(
    boundary: string,
    private readonly scratchDir: string,
    private readonly limits: UploadLimits,
    private readonly ex: HttpExchange,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.done.catch(() => {});
    ex.onAbort(() => this.fail(new Error('client gone')));
    ex.streamBody((chunk, isLast) => {
      if (this.failed) return;
      try {
        this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
        this.parse();
        if (isLast) this.finish();
      } catch (err) {
        this.fail(err);
      }
    });
  }

  private parse(): void {
    for (;;) {
      if (this.state === 'preamble' || this.state === 'body') {
        const at = this.pending.indexOf(this.delimiter);
        if (at < 0) {
          const keep = Math.min(this.pending.length, this.delimiter.length - 1);
          this.data(this.pending.subarray(0, this.pending.length - keep));
          this.pending = this.pending.subarray(this.pending.length - keep);
          return;
        }
        this.data(this.pending.subarray(0, at));
        this.endPart();
        this.pending = this.pending.subarray(at + this.delimiter.length);
        this.state = 'delimiter';
      } else if (this.state === 'delimiter') {
        if (this.pending.length < 2) return;
        const two = this.pending.subarray(0, 2).toString('latin1');
        if (two === '--') {
          this.state = 'end';
          this.pending = Buffer.alloc(0);
          return;
        }
        const eol = this.pending.indexOf('\r\n');
        if (eol < 0) {
          if (this.pending.length > 256) throw malformed();
          return;
        }
        this.pending = this.pending.subarray(eol + 2); // transport padding after the boundary is allowed
        this.state = 'headers';
      } else if (this.state === 'headers') {
        const at = this.pending.indexOf('\r\n\r\n');
        if (at < 0) {
          if (this.pending.length > HEADER_LIMIT) throw malformed();
          return;
        }
        this.startPart(this.pending.subarray(0, at).toString('utf8'));
        this.pending = this.pending.subarray(at + 4);
        this.state = 'body';
      } else {
        this.pending = Buffer.alloc(0); // the epilogue is ignored
        return;
      }
    }
  }

  private startPart(head: string): void {
    const disposition = /^content-disposition:(.*)$/im.exec(head)?.[1] ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ?? /\bname=([^;\s]+)/i.exec(disposition)?.[1];
    if (name === undefined) throw malformed();
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1] ?? null;
    this.part = { name, filename, text: '' };
    if (name === 'file') {
      if (this.file !== null) throw invalidRequest("Send one 'file' part", 'file', 'invalid_value');
      const p = path.join(this.scratchDir, `upload-${randomUUID()}`);
      const out = fs.createWriteStream(p, { mode: 0o600 });
      out.on('error', (err) => this.fail(err));
      this.file = { path: p, out, filename: (filename ?? 'upload.jsonl').slice(0, 255) };
    }
  }

  private data(bytes: Buffer): void {
    if (bytes.length === 0 || this.part === null || this.state !== 'body') return;
    if (this.part.name !== 'file') {
      this.part.text += bytes.toString('utf8');
      if (this.part.text.length > FIELD_LIMIT)
        throw invalidRequest(`The field '${this.part.name}' is too long`, this.part.name, 'invalid_value');
      return;
    }
    this.bytes += bytes.length;
    if (this.bytes > this.limits.fileBytes) throw payloadTooLarge(this.limits.fileBytes);
    for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) this.newlines++;
    this.lastByte = bytes[bytes.length - 1]!;
    if (this.newlines > this.limits.lines)
      throw invalidRequest(`The file has more than ${this.limits.lines} lines`, 'file', 'too_many_lines');
    const copy = Buffer.from(bytes); // the chunk may be a view of a buffer parse() keeps using
    if (!this.file!.out.write(copy)) {
      this.ex.pauseBody();
      this.file!.out.once('drain', () => this.ex.resumeBody());
    }
  }

  private endPart(): void {
    if (this.part !== null && this.part.name !== 'file') this.fields.set(this.part.name, this.part.text);
    this.part = null;
  }

  private finish(): void {
    // The body has arrived whole: a pause the last chunk took waits for a 'drain' that end() may never emit, and a
    // paused keep-alive socket reads no next request.
    this.ex.resumeBody();
    if (this.state !== 'end') throw malformed();
    const file = this.file;
    if (file === null) throw invalidRequest("The upload has no 'file' part", 'file', 'missing_file');
    const lines = this.newlines + (this.bytes > 0 && this.lastByte !== 10 ? 1 : 0);
    if (lines > this.limits.lines)
      throw invalidRequest(`The file has more than ${this.limits.lines} lines`, 'file', 'too_many_lines');
    this.writing = new Promise((resolve, reject) => {
      file.out.end((err?: Error | null) => (err ? reject(err) : resolve()));
    });
    this.writing.then(
      () => this.resolve({ path: file.path, filename: file.filename, bytes: this.bytes, lines, fields: this.fields }),
      (err: unknown) => this.fail(err),
    );
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    if (this.file !== null) {
      const p = this.file.path;
      // The stream opens its file asynchronously: removed once it is closed, so an open after a failure leaves nothing.
      this.file.out.once('close', () => fs.rm(p, { force: true }, () => {}));
      this.file.out.destroy();
    }
    this.ex.resumeBody();
    this.reject(err);
  }
}

function malformed() {
  return invalidRequest('The multipart body is malformed', null, 'invalid_multipart');
}
