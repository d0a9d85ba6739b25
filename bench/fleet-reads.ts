import path from 'node:path';
import pg from 'pg';
import { ensureTinyModel } from '../models/test-model-path.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { type HearthProcess, startBenchHearth } from './lib/servers.ts';
import { percentile } from './lib/stats.ts';

/**
 * bench:fleet-reads: what reading every replica's writes costs a management request. Two Hearths on one
 * PostgreSQL database (`--database-url URL`, or BENCH_DATABASE_URL: empty or Hearth-owned), this checkout and a
 * baseline (`--baseline DIR`, or BENCH_BASELINE: another checkout, e.g. `git archive <commit> | tar -x -C DIR` with
 * node_modules linked), both `--engine instant --front off`. In ROUNDS (5) alternating rounds, each answers
 * BENCH_REQUESTS (400) `GET /api/v1/workspaces/{id}` and as many `GET /api/v1/workspaces` (20 workspaces) one at a
 * time, then the same with 16 at once; latency is client-side (fetch, keep-alive), p50 and p99 over all rounds,
 * and the ratio this checkout / baseline of the per-round medians. For scale, each round also times REQUESTS
 * `SELECT 1` on one connection from this process: one database round trip.
 */
const arg = (flag: string, env: string) => {
  const at = process.argv.indexOf(flag);
  return at > 0 ? process.argv[at + 1] : process.env[env];
};
const DATABASE_URL = arg('--database-url', 'BENCH_DATABASE_URL');
const BASELINE = arg('--baseline', 'BENCH_BASELINE');
if (!DATABASE_URL || !BASELINE) throw new Error('give --database-url URL and --baseline DIR');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 400);
const CONCURRENT = 16;

const model = await ensureTinyModel();
const SERVE = ['--model', model, '--engine', 'instant', '--front', 'off'];
const env = { HEARTH_DATABASE_URL: DATABASE_URL, HEARTH_SECRET_KEY: 'ab'.repeat(32) };
const targets = {
  current: await startBenchHearth(SERVE, env),
  baseline: await startBenchHearth(SERVE, env, path.resolve(BASELINE, 'bin/hearth.js')),
};
type Target = keyof typeof targets;

const call = async (h: HearthProcess, method: string, url: string, body?: unknown) => {
  const r = await fetch(`${h.baseUrl}${url}`, {
    method,
    headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${text}`);
  return JSON.parse(text) as unknown;
};
const workspaceIds: string[] = [];
for (let i = 0; i < 20; i++)
  workspaceIds.push(
    ((await call(targets.current, 'POST', '/api/v1/workspaces', { name: `bench ${i}` })) as { workspaceId: string })
      .workspaceId,
  );
const accountOf = async (h: HearthProcess) =>
  ((await call(h, 'GET', '/api/v1/session')) as { accountId: string }).accountId;
if ((await accountOf(targets.current)) !== (await accountOf(targets.baseline)))
  throw new Error('the two keys are of different accounts');

type Kind = 'get' | 'list';
const paths: Record<Kind, (i: number) => string> = {
  get: (i) => `/api/v1/workspaces/${workspaceIds[i % workspaceIds.length]}`,
  list: () => '/api/v1/workspaces',
};
/** Latencies (ms) of `n` requests, `concurrency` at a time. */
async function measure(h: HearthProcess, kind: Kind, n: number, concurrency: number): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await call(h, 'GET', paths[kind](i));
        out.push(performance.now() - t);
      }
    }),
  );
  return out;
}

const db = new pg.Client({ connectionString: DATABASE_URL });
await db.connect();
const roundTrips: number[] = [];
type Series = `${Kind} x${number}`;
const samples: Record<Target, Record<string, number[]>> = { current: {}, baseline: {} };
const medians: Record<Target, Record<string, number[]>> = { current: {}, baseline: {} };
try {
  for (const t of Object.keys(targets) as Target[]) await measure(targets[t], 'get', 100, 4); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < REQUESTS; i++) {
      const t = performance.now();
      await db.query('SELECT 1');
      roundTrips.push(performance.now() - t);
    }
    const order = (round % 2 === 0 ? ['current', 'baseline'] : ['baseline', 'current']) as Target[];
    for (const concurrency of [1, CONCURRENT]) {
      for (const kind of ['get', 'list'] as Kind[]) {
        for (const t of order) {
          const series: Series = `${kind} x${concurrency}`;
          const xs = await measure(targets[t], kind, REQUESTS, concurrency);
          (samples[t][series] ??= []).push(...xs);
          (medians[t][series] ??= []).push(percentile(xs, 50));
        }
      }
    }
  }
} finally {
  await db.end();
  await targets.current.stop();
  await targets.baseline.stop();
}

const ms = (x: number) => `${x.toFixed(2)} ms`;
const median = (xs: number[]) => percentile(xs, 50);
const rows = Object.keys(samples.current).flatMap((series) => {
  const label = series.startsWith('get')
    ? `GET /api/v1/workspaces/{id}, ${series.slice(4)} at once`
    : `GET /api/v1/workspaces (20), ${series.slice(5)} at once`;
  return [
    [
      label,
      'baseline',
      fmt.int(samples.baseline[series]!.length),
      ms(percentile(samples.baseline[series]!, 50)),
      ms(percentile(samples.baseline[series]!, 99)),
      '',
    ],
    [
      label,
      'this checkout',
      fmt.int(samples.current[series]!.length),
      ms(percentile(samples.current[series]!, 50)),
      ms(percentile(samples.current[series]!, 99)),
      (median(medians.current[series]!) / median(medians.baseline[series]!)).toFixed(2),
    ],
  ];
});
const markdown = `Two Hearths on one PostgreSQL database (loopback, \`--engine instant --front off\`): this checkout and ${BASELINE}, ${ROUNDS} alternating rounds of ${REQUESTS} requests per series; client-side latency (fetch, keep-alive).

${table(['request', 'Hearth', 'samples', 'p50', 'p99', 'this / baseline (median of round medians)'], rows)}

One database round trip (\`SELECT 1\`, one connection, the same rounds): p50 ${ms(percentile(roundTrips, 50))}, p99 ${ms(percentile(roundTrips, 99))}.`;
recordResults(
  'fleet-reads',
  'Fleet: management reads that see every replica',
  { rounds: ROUNDS, requests: REQUESTS, baseline: BASELINE, samples, medians, roundTrips },
  markdown,
);
