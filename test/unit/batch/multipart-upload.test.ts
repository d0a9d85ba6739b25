import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { stageMultipartUpload, type StagedUpload } from '../../../src/batch/multipart-upload.ts';
import type { HttpExchange } from '../../../src/http/http-exchange.ts';

/**
 * The streaming multipart reader of POST /files: parts split at every possible chunk boundary give the same file and
 * fields; limits (bytes, lines) refuse as documented and leave no scratch file; malformed bodies are 400s.
 */
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-multipart-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

const BOUNDARY = '----formdata-test-123';
const body = (file: string, purpose = 'batch') =>
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n${file}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n--${BOUNDARY}--\r\n`,
  );

/** A fake exchange delivering `chunks` as uWS would (each call a view that is reused). */
function exchange(
  chunks: Buffer[],
  contentType = `multipart/form-data; boundary=${BOUNDARY}`,
  declared?: number,
): HttpExchange {
  return {
    header: (name: string) => (name === 'content-type' ? contentType : ''),
    contentLength: declared,
    hasBody: true,
    onAbort: () => {},
    pauseBody: () => {},
    resumeBody: () => {},
    streamBody: (onChunk: (chunk: Buffer, isLast: boolean) => void) => {
      queueMicrotask(() => chunks.forEach((c, i) => onChunk(c, i === chunks.length - 1)));
    },
  } as unknown as HttpExchange;
}

const limits = { fileBytes: 1 << 20, lines: 10 };
const staged = async (u: Promise<StagedUpload>) => {
  const s = await u;
  const text = fs.readFileSync(s.path, 'utf8');
  fs.rmSync(s.path);
  return { ...s, text };
};

describe('stageMultipartUpload', () => {
  const file = '{"custom_id":"a"}\n{"custom_id":"b"}\n';

  it('reads the file part and the purpose field, split at every byte', async () => {
    const whole = body(file);
    for (let cut = 1; cut < whole.length; cut++) {
      const s = await staged(
        stageMultipartUpload(exchange([whole.subarray(0, cut), whole.subarray(cut)]), scratch, limits),
      );
      expect(s.text, `cut at ${cut}`).toBe(file);
      expect(s.fields.get('purpose')).toBe('batch');
      expect(s).toMatchObject({ filename: 'in.jsonl', bytes: Buffer.byteLength(file), lines: 2 });
    }
  });

  it('reads it byte by byte, and counts a last line without a newline', async () => {
    const whole = body('{"a":1}\n{"b":2}');
    const s = await staged(stageMultipartUpload(exchange([...whole].map((b) => Buffer.from([b]))), scratch, limits));
    expect(s.text).toBe('{"a":1}\n{"b":2}');
    expect(s.lines).toBe(2);
  });

  it('refuses a file over the byte limit (413) or the line limit (400), leaving no scratch file', async () => {
    await expect(
      stageMultipartUpload(exchange([body('x'.repeat(2000))]), scratch, { fileBytes: 1000, lines: 10 }),
    ).rejects.toMatchObject({ status: 413 });
    await expect(stageMultipartUpload(exchange([body('a\n'.repeat(11))]), scratch, limits)).rejects.toMatchObject({
      status: 400,
      code: 'too_many_lines',
    });
    await expect(
      stageMultipartUpload(exchange([body('x')], undefined, 1 << 30), scratch, { fileBytes: 1000, lines: 10 }),
    ).rejects.toMatchObject({ status: 413 });
    // The scratch file is removed behind the refusal (open, close, unlink on libuv's pool).
    await vi.waitFor(() => expect(fs.readdirSync(scratch)).toEqual([]), { timeout: 5_000, interval: 20 });
  });

  it('refuses what is not multipart, a truncated body and one without a file part (400)', async () => {
    await expect(
      stageMultipartUpload(exchange([body(file)], 'application/json'), scratch, limits),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_content_type' });
    const whole = body(file);
    await expect(
      stageMultipartUpload(exchange([whole.subarray(0, whole.length - 10)]), scratch, limits),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_multipart' });
    const noFile = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${BOUNDARY}--\r\n`,
    );
    await expect(stageMultipartUpload(exchange([noFile]), scratch, limits)).rejects.toMatchObject({
      status: 400,
      code: 'missing_file',
    });
  });
});
