import net from 'node:net';
import { ensureTinyModel } from '../models/test-model-path.ts';
import { recordResults, table } from './lib/report.ts';
import { startBenchHearth } from './lib/servers.ts';

/**
 * bench:early-413: when a client that declared a body over the limit reads its 413 and loses its connection, in
 * both front modes (README "Limits", docs/http-front.md). Raw sockets against `hearth serve --body-limit 65536`:
 * - stalled: `Content-Length` declared, 8 body bytes sent, then nothing (the client keeps reading);
 * - uploading: 16 KiB every 20 ms until the answer's head arrives, then nothing;
 * - 2 GiB: a 10-digit length, 8 bytes sent.
 * Reported per case: first byte of the answer, the answer complete, the server's side closed (FIN or reset), all
 * in ms from the connect; "-" when it did not happen within BENCH_WAIT_S (default 15). Timings, not assertions:
 * the behaviour is tested in test/e2e/http-edge/body-limits-half-close-head-size.test.ts.
 */
const WAIT_MS = Number(process.env.BENCH_WAIT_S ?? 15) * 1000;
const LIMIT = 65_536;

interface Probe {
  front: string;
  case: string;
  declared: number;
  firstByteMs: number | null;
  completeMs: number | null;
  closedMs: number | null;
  status: string;
}

function probe(
  port: number,
  key: string,
  declared: string,
  uploading: boolean,
): Promise<Omit<Probe, 'front' | 'case'>> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const since = () => Math.round((performance.now() - t0) * 10) / 10;
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    let firstByteMs: number | null = null;
    let completeMs: number | null = null;
    const done = (closedMs: number | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({
        declared: Number(declared),
        firstByteMs,
        completeMs,
        closedMs,
        status: /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 'none',
      });
    };
    const timer = setTimeout(() => done(null), WAIT_MS);
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      firstByteMs ??= since();
      text += d.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      if (completeMs === null && head > 0) {
        const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head));
        if (length ? text.length - head - 4 >= Number(length[1]) : text.endsWith('\r\n0\r\n\r\n')) completeMs = since();
      }
    });
    socket.on('end', () => done(since()));
    socket.on('close', () => done(since()));
    socket.on('connect', async () => {
      socket.write(
        `POST /api/inference/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"model"`,
      );
      let sent = 8;
      while (uploading && firstByteMs === null && sent < Number(declared) && !socket.destroyed) {
        await new Promise((r) => setTimeout(r, 20));
        socket.write(Buffer.alloc(16_384, 0x20));
        sent += 16_384;
      }
    });
  });
}

const model = await ensureTinyModel();
const rows: Probe[] = [];
for (const front of ['haproxy', 'off']) {
  const hearth = await startBenchHearth([
    '--model',
    model,
    '--engine',
    'instant',
    '--body-limit',
    String(LIMIT),
    '--front',
    front,
  ]);
  try {
    for (const [name, declared, uploading] of [
      ['stalled, 2 MiB', '2097152', false],
      ['uploading, 4 MiB', '4194304', true],
      ['stalled, 2 GiB', '2147483648', false],
    ] as const) {
      const r = await probe(hearth.port, hearth.key, declared, uploading);
      rows.push({ front, case: name, ...r });
      console.log(front, name, JSON.stringify(r));
    }
  } finally {
    await hearth.stop();
  }
}
const ms = (v: number | null) => (v === null ? '-' : `${v} ms`);
const markdown = `Raw sockets against \`hearth serve --body-limit ${LIMIT}\`; times from the connect; "-": not within ${WAIT_MS / 1000} s.

${table(
  ['front', 'case', 'status', 'first byte', 'answer complete', 'server side closed'],
  rows.map((r) => [r.front, r.case, r.status, ms(r.firstByteMs), ms(r.completeMs), ms(r.closedMs)]),
)}`;
recordResults('early-413', 'A 413 decided from the head', { limit: LIMIT, waitMs: WAIT_MS, rows }, markdown);
