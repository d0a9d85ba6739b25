import os from 'node:os';
import path from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { ensureTinyModel } from '../models/test-model-path.ts';
import { threadCpu } from './lib/cpu.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { startBareUws, startBenchHearth } from './lib/servers.ts';
import { sleep } from './lib/stats.ts';

/**
 * bench:gateway: the cost of Hearth's HTTP layer. Authenticated GET /api/inference/v1/models on Hearth
 * (uWS + router + bearer parsing + API-key lookup in LMDB with a constant-time SHA-256 compare + JSON +
 * metrics) against a bare uWebSockets.js server (its own process) returning the same bytes. Same
 * connections, pipelining and duration, alternating A/B rounds so drift hits both. Target: ratio >= 0.85.
 * Options (env): BENCH_CONNECTIONS (default 32), BENCH_DURATION seconds per measurement (10),
 * BENCH_ROUNDS (2), BENCH_WARMUP seconds (2).
 * `--database-url URL` (or BENCH_DATABASE_URL): a second Hearth keeps its records in that (empty or
 * Hearth-owned) PostgreSQL database and is measured in the same rounds; the report gives its ratio to the
 * LMDB one (goal >= 0.9: the key lookup answers from the in-memory mirror either way).
 * `--baseline DIR` (or BENCH_BASELINE): a Hearth from another checkout (e.g. `git worktree add DIR <commit>`, with
 * node_modules linked) is measured in the same rounds; the report gives this checkout's CPU per request and req/s
 * over the baseline's (medians over rounds), the figure to judge a change by: round-to-round drift on a shared
 * machine (10-20 %) is larger than most changes, and alternating rounds cancel it.
 */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const TARGET = 0.85;
const PG_TARGET = 0.9;
const argIndex = process.argv.indexOf('--database-url');
const DATABASE_URL = argIndex > 0 ? process.argv[argIndex + 1] : process.env.BENCH_DATABASE_URL;
const baselineIndex = process.argv.indexOf('--baseline');
const BASELINE = baselineIndex > 0 ? process.argv[baselineIndex + 1] : process.env.BENCH_BASELINE;

type Target = 'hearth' | 'hearth-pg' | 'bare' | 'baseline';
interface Measurement {
  target: Target;
  round: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  cpuUsPerReq: number;
}

const processCpu = (pid: number) => threadCpu(pid).reduce((a, t) => a + t.seconds, 0);

async function measure(url: string, headers: Record<string, string>, duration: number): Promise<Result> {
  return autocannon({ url, connections: CONNECTIONS, pipelining: 1, duration, headers, timeout: 10 });
}

const model = await ensureTinyModel();
// uWS alone (--front off), as the bare server it is compared with: what is measured is the gateway's own work
// (authentication, the key's record, routing, the answer); the HAProxy front's cost is docs/http-front.md's A/B.
const SERVE = ['--model', model, '--engine', 'instant', '--front', 'off'];
const hearth = await startBenchHearth(SERVE);
const hearthPg = DATABASE_URL ? await startBenchHearth(SERVE, { HEARTH_DATABASE_URL: DATABASE_URL }) : undefined;
const baseline = BASELINE ? await startBenchHearth(SERVE, {}, path.resolve(BASELINE, 'bin/hearth.js')) : undefined;
const url = `${hearth.baseUrl}/api/inference/v1/models`;
const auth = { authorization: `Bearer ${hearth.key}` };
const res = await fetch(url, { headers: auth });
if (res.status !== 200) throw new Error(`GET /models answered ${res.status}`);
const body = await res.text();
const bare = await startBareUws(body);
/** Each measured server: where to send the request, with which key, and whose CPU to count. */
const servers = new Map<Target, { url: string; headers: Record<string, string>; pid: number }>([
  ['bare', { url: `${bare.url}/api/inference/v1/models`, headers: {}, pid: bare.proc.pid! }],
  ['hearth', { url, headers: auth, pid: hearth.proc.pid! }],
]);
for (const [target, h] of [
  ['hearth-pg', hearthPg],
  ['baseline', baseline],
] as const) {
  if (h !== undefined)
    servers.set(target, {
      url: `${h.baseUrl}/api/inference/v1/models`,
      headers: { authorization: `Bearer ${h.key}` },
      pid: h.proc.pid!,
    });
}
for (const [target, s] of servers) {
  const r = await fetch(s.url, { headers: s.headers });
  if (r.status !== 200) throw new Error(`GET /models on ${target} answered ${r.status}`);
  if (target === 'bare' && (await r.text()) !== body) throw new Error('the bare server does not return the same bytes');
}

const results: Measurement[] = [];
try {
  for (const s of servers.values()) await measure(s.url, s.headers, WARMUP);
  for (let round = 1; round <= ROUNDS; round++) {
    const targets = [...servers.keys()];
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const target of order) {
      await sleep(500);
      const s = servers.get(target)!;
      const cpuBefore = processCpu(s.pid);
      const r = await measure(s.url, s.headers, DURATION);
      const cpuUsPerReq = ((processCpu(s.pid) - cpuBefore) / r.requests.total) * 1e6;
      const m: Measurement = {
        target,
        round,
        reqPerSec: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        total: r.requests.total,
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        cpuUsPerReq,
      };
      console.log(
        `${target} round ${round}: ${fmt.int(m.reqPerSec)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, server CPU ${cpuUsPerReq.toFixed(1)} us/req, non-2xx ${m.non2xx}, errors ${m.errors}`,
      );
      results.push(m);
    }
  }
} finally {
  await bare.stop();
  await hearth.stop();
  await hearthPg?.stop();
  await baseline?.stop();
}

const sum = (t: Measurement['target'], f: (m: Measurement) => number) =>
  results.filter((m) => m.target === t).reduce((a, m) => a + f(m), 0) / ROUNDS;
const hearthRps = sum('hearth', (m) => m.reqPerSec);
const bareRps = sum('bare', (m) => m.reqPerSec);
const ratio = hearthRps / bareRps;
const bad = results.reduce((a, m) => a + m.non2xx + m.errors + m.timeouts, 0);
const SERVER_NAMES: Record<Target, string> = {
  hearth: 'Hearth (auth + LMDB key lookup)',
  'hearth-pg': 'Hearth, records in PostgreSQL (mirror key lookup)',
  bare: 'bare uWS, same bytes',
  baseline: `Hearth from ${BASELINE}`,
};
const pgRps = hearthPg ? sum('hearth-pg', (m) => m.reqPerSec) : undefined;
const pgRatio = pgRps === undefined ? undefined : pgRps / hearthRps;
const rows = results.map((m) => [
  m.round,
  SERVER_NAMES[m.target],
  fmt.int(m.reqPerSec),
  `${m.p50} ms`,
  `${m.p99} ms`,
  fmt.int(m.total),
  `${m.cpuUsPerReq.toFixed(1)} µs`,
  m.non2xx + m.errors + m.timeouts,
]);
const hearthCpu = sum('hearth', (m) => m.cpuUsPerReq);
const bareCpu = sum('bare', (m) => m.cpuUsPerReq);
const median = (t: Target, f: (m: Measurement) => number) => {
  const v = results
    .filter((m) => m.target === t)
    .map(f)
    .sort((a, b) => a - b);
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
const versusBaseline =
  baseline === undefined
    ? undefined
    : {
        cpu: median('hearth', (m) => m.cpuUsPerReq) / median('baseline', (m) => m.cpuUsPerReq),
        rps: median('hearth', (m) => m.reqPerSec) / median('baseline', (m) => m.reqPerSec),
      };
const markdown = `Authenticated \`GET /api/inference/v1/models\` (${body.length} bytes) vs a bare uWebSockets.js server returning the same bytes;
autocannon, ${CONNECTIONS} connections, pipelining 1, ${DURATION} s per measurement, ${ROUNDS} alternating rounds after ${WARMUP} s warm-up each.
Hearth runs with \`--engine instant\` (the route does not touch the model) and \`--front off\` (uWS alone, as the bare server).

${table(['round', 'server', 'req/s', 'latency p50', 'latency p99', 'requests', 'server CPU per request', 'non-2xx/errors'], rows)}

**Ratio Hearth / bare (mean req/s over rounds): ${ratio.toFixed(3)}** (target >= ${TARGET}: ${ratio >= TARGET ? 'met' : 'NOT met'})${bad > 0 ? `; ${bad} non-2xx/errors/time-outs: the numbers are suspect` : ''}.${
  pgRatio === undefined
    ? ''
    : `
**Ratio PostgreSQL records / LMDB records (mean req/s): ${pgRatio.toFixed(3)}** (goal >= ${PG_TARGET}: ${pgRatio >= PG_TARGET ? 'met' : 'NOT met'}).`
}${
  versusBaseline === undefined
    ? ''
    : `
**This checkout / baseline (${BASELINE}), medians over rounds: CPU per request ${versusBaseline.cpu.toFixed(3)}, req/s ${versusBaseline.rps.toFixed(3)}.**`
}
Server CPU per request (all threads of the server process, /proc): Hearth ${hearthCpu.toFixed(1)} µs, bare ${bareCpu.toFixed(1)} µs
(the load generator runs on the same ${os.availableParallelism()} cores; when it saturates them, req/s understates the difference that CPU per request shows).`;
recordResults(
  'gateway',
  'Gateway overhead',
  {
    connections: CONNECTIONS,
    duration: DURATION,
    rounds: ROUNDS,
    bodyBytes: body.length,
    results,
    hearthRps,
    bareRps,
    ratio,
    target: TARGET,
    pgRps,
    pgRatio,
    pgTarget: PG_TARGET,
    hearthCpuUsPerReq: hearthCpu,
    bareCpuUsPerReq: bareCpu,
    baseline: BASELINE,
    versusBaseline,
  },
  markdown,
);
if (bad > 0) process.exitCode = 1;
