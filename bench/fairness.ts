import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureTinyModel } from '../models/test-model-path.ts';
import { fmt, recordResults, table } from './lib/report.ts';
import { type HearthProcess, startBenchHearth } from './lib/servers.ts';
import { nativeModelArgs } from '../test/helpers/hearth-process.ts';
import { keepAliveAgent, streamChat, type StreamOutcome } from './lib/sse-client.ts';
import { percentile, sleep } from './lib/stats.ts';

/**
 * bench:fairness: fair share and priority between tenants (contract "Fair share and priority between tenants"),
 * on one server with SLOTS slots (one worker, native engine), accounts A and B (keys made with the CLI):
 * (a) A keeps 4x slots of streams open, B sends one request at a time: B's TTFT p50, against B's TTFT while A
 *     keeps exactly as many streams as slots (no queue). Goal: <= 1.5x.
 * (b) A keeps 3x slots of streams open, B 1x slots: B's share of the generated tokens over SECONDS. Goal 45-55 %.
 * (c) A batch-priority key keeps 2x slots of streams open, one interactive stream at a time: its TTFT p50 and
 *     tok/s against an idle server's. Goals: TTFT <= 1.5x idle + one decode step, tok/s >= 0.8x; batch tok/s.
 * (d) one tenant, 2x slots of streams: throughput against the baseline checkout's (interleaved rounds, medians).
 * With a baseline checkout (`--baseline DIR` or BENCH_BASELINE: e.g. a worktree of the commit before), (a), (b)
 * and (c) also run on it for the "before" figures (it has no priorities: (c)'s batch load is ordinary there).
 * Options (env): BENCH_FAIRNESS_SLOTS (4), BENCH_FAIRNESS_SECONDS ((b)'s window, 30), BENCH_FAIRNESS_PHASE_SECONDS
 * ((a), (c) phases, 10), BENCH_FAIRNESS_ROUNDS ((d), 3), BENCH_FAIRNESS_SCENARIOS (abcd), BENCH_FAIRNESS_MODEL (a .gguf; default a synthetic llama
 * of 6 blocks x 384 wide that never stops on its own, so every request runs to max_tokens and a decode step costs
 * a few milliseconds on a CPU: the project's 2-block test model decodes so fast that thread hops, not steps, are timed).
 */
const SLOTS = Number(process.env.BENCH_FAIRNESS_SLOTS ?? 4);
const SECONDS = Number(process.env.BENCH_FAIRNESS_SECONDS ?? 30);
const PHASE_SECONDS = Number(process.env.BENCH_FAIRNESS_PHASE_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_FAIRNESS_ROUNDS ?? 3);
/** Which scenarios run (letters of abcd). */
const SCENARIOS = process.env.BENCH_FAIRNESS_SCENARIOS ?? 'abcd';
const baselineIndex = process.argv.indexOf('--baseline');
const BASELINE = baselineIndex > 0 ? process.argv[baselineIndex + 1] : process.env.BENCH_BASELINE;
const MODEL_ID = 'local/fairness';
/** A's (and the batch load's) requests: long enough that slots turn over a few times a second. */
const LONG_TOKENS = 48;
/** B's and the interactive stream's requests. */
const SHORT_TOKENS = 24;

const modelPath =
  process.env.BENCH_FAIRNESS_MODEL ??
  (await ensureTinyModel({
    reply: null,
    blockCount: 6,
    embeddingLength: 384,
    headCount: 6,
    headCountKv: 2,
    feedForwardLength: 1024,
  }));
const SERVE = nativeModelArgs(modelPath, MODEL_ID, {
  slots: SLOTS,
  'queue-limit': 16 * SLOTS,
  'max-tokens': 100000,
  'context-size': 512,
});

interface Server {
  name: string;
  hearth: HearthProcess;
  /** Keys: A (account a), B (account b), A's batch key (account a; interactive on a baseline without priorities). */
  a: string;
  b: string;
  batch: string;
}

function cliKey(bin: string, dataDir: string, name: string, extra: string[]): string {
  const r = spawnSync(
    process.execPath,
    [bin, 'keys', 'create', '--name', name, '--data-dir', dataDir, '--json', ...extra],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`keys create failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

async function startServer(name: string, checkout: string | undefined): Promise<Server> {
  const bin = path.resolve(checkout ?? path.join(import.meta.dirname, '..'), 'bin/hearth.js');
  const hearth = await startBenchHearth(SERVE, {}, checkout === undefined ? undefined : bin);
  const a = cliKey(bin, hearth.dataDir, 'a', ['--account', 'a']);
  const b = cliKey(bin, hearth.dataDir, 'b', ['--account', 'b']);
  const batch =
    checkout === undefined ? cliKey(bin, hearth.dataDir, 'a-batch', ['--account', 'a', '--priority', 'batch']) : a;
  return { name, hearth, a, b, batch };
}

const agent = keepAliveAgent(256);

function stream(s: Server, key: string, maxTokens: number): Promise<StreamOutcome> {
  return streamChat(
    `${s.hearth.baseUrl}/api/inference/v1/chat/completions`,
    key,
    {
      model: MODEL_ID,
      messages: [{ role: 'user', content: 'go' }],
      max_tokens: maxTokens,
      stream_options: { include_usage: true },
    },
    { agent, timeoutMs: 300_000 },
  );
}

const tokensOf = (o: StreamOutcome) => o.chunks.find((c) => c.usage)?.usage?.completion_tokens ?? 0;

/** `n` clients of `key`, each sending a request as soon as its last one ended, until stop(); tokens counted by their end time. */
function keepOpen(s: Server, key: string, n: number, maxTokens: number) {
  let running = true;
  const done: Array<{ at: number; tokens: number }> = [];
  const loops = Array.from({ length: n }, async () => {
    while (running) {
      const o = await stream(s, key, maxTokens);
      if (o.status !== 200 || o.error) throw new Error(`load request failed: ${o.status} ${o.error ?? ''}`);
      done.push({ at: o.endedAt, tokens: tokensOf(o) });
    }
  });
  return {
    tokensBetween: (from: number, to: number) =>
      done.filter((d) => d.at >= from && d.at < to).reduce((t, d) => t + d.tokens, 0),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** hearth_preemptions_total of the server (NaN on a baseline without it). */
async function preemptions(s: Server): Promise<number> {
  const text = await (await fetch(`${s.hearth.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('hearth_preemptions_total{'));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** One client of `key` sending requests one at a time for `seconds`: TTFT and tok/s (after the first token) of each. */
async function sequential(s: Server, key: string, seconds: number): Promise<{ ttft: number[]; tokPerS: number[] }> {
  const ttft: number[] = [];
  const tokPerS: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const o = await stream(s, key, SHORT_TOKENS);
    if (o.status !== 200 || o.error) throw new Error(`request failed: ${o.status} ${o.error ?? ''}`);
    ttft.push(o.firstContentAt - o.sentAt);
    const n = tokensOf(o);
    if (n > 1) tokPerS.push((n - 1) / ((o.endedAt - o.firstContentAt) / 1000));
  }
  return { ttft, tokPerS };
}

const p50 = (v: number[]) => percentile(v, 50);

async function scenarioA(s: Server) {
  const base = keepOpen(s, s.a, SLOTS, LONG_TOKENS);
  await sleep(500);
  const alone = await sequential(s, s.b, PHASE_SECONDS);
  await base.stop();
  const flood = keepOpen(s, s.a, 4 * SLOTS, LONG_TOKENS);
  await sleep(500);
  const flooded = await sequential(s, s.b, PHASE_SECONDS);
  await flood.stop();
  return {
    ttftNoQueueMs: p50(alone.ttft),
    ttftFloodMs: p50(flooded.ttft),
    ratio: p50(flooded.ttft) / p50(alone.ttft),
    samples: [alone.ttft.length, flooded.ttft.length],
  };
}

async function scenarioB(s: Server) {
  const a = keepOpen(s, s.a, 3 * SLOTS, LONG_TOKENS);
  const b = keepOpen(s, s.b, SLOTS, LONG_TOKENS);
  await sleep(2_000); // past the start, when both have requests waiting
  const from = performance.now();
  await sleep(SECONDS * 1000);
  const to = performance.now();
  await Promise.all([a.stop(), b.stop()]);
  const ta = a.tokensBetween(from, to);
  const tb = b.tokensBetween(from, to);
  return { tokensA: ta, tokensB: tb, shareB: tb / (ta + tb) };
}

async function scenarioC(s: Server) {
  const idle = await sequential(s, s.a, PHASE_SECONDS);
  const load = keepOpen(s, s.batch, 2 * SLOTS, LONG_TOKENS);
  await sleep(1_000);
  const preemptedBefore = await preemptions(s);
  const from = performance.now();
  const busy = await sequential(s, s.a, PHASE_SECONDS);
  const to = performance.now();
  const preempted = (await preemptions(s)) - preemptedBefore;
  await load.stop();
  const decodeStepMs = 1000 / p50(idle.tokPerS);
  return {
    idleTtftMs: p50(idle.ttft),
    busyTtftMs: p50(busy.ttft),
    decodeStepMs,
    ttftBound: 1.5 * p50(idle.ttft) + decodeStepMs,
    idleTokPerS: p50(idle.tokPerS),
    busyTokPerS: p50(busy.tokPerS),
    tokRatio: p50(busy.tokPerS) / p50(idle.tokPerS),
    batchTokPerS: load.tokensBetween(from, to) / ((to - from) / 1000),
    interactiveRequests: busy.ttft.length,
    preempted,
  };
}

async function throughput(s: Server, seconds: number): Promise<number> {
  const load = keepOpen(s, s.a, 2 * SLOTS, LONG_TOKENS);
  await sleep(500);
  const from = performance.now();
  await sleep(seconds * 1000);
  const to = performance.now();
  await load.stop();
  return load.tokensBetween(from, to) / ((to - from) / 1000);
}

const after = await startServer('after', undefined);
const before = BASELINE ? await startServer('before', BASELINE) : undefined;
const servers = [after, ...(before ? [before] : [])];
try {
  const results: Record<
    string,
    {
      a?: Awaited<ReturnType<typeof scenarioA>>;
      b?: Awaited<ReturnType<typeof scenarioB>>;
      c?: Awaited<ReturnType<typeof scenarioC>>;
    }
  > = {};
  for (const s of servers) {
    const r: (typeof results)[string] = {};
    if (SCENARIOS.includes('a')) {
      console.log(`[${s.name}] (a) B's TTFT under A's flood`);
      r.a = await scenarioA(s);
    }
    if (SCENARIOS.includes('b')) {
      console.log(`[${s.name}] (b) token shares over ${SECONDS} s`);
      r.b = await scenarioB(s);
    }
    if (SCENARIOS.includes('c')) {
      console.log(`[${s.name}] (c) interactive under a batch load`);
      r.c = await scenarioC(s);
    }
    results[s.name] = r;
  }
  const rounds: Array<{ after: number; before: number | null }> = [];
  for (let r = 0; r < (SCENARIOS.includes('d') ? ROUNDS : 0); r++) {
    console.log(`(d) one tenant, round ${r + 1}/${ROUNDS}`);
    const x = await throughput(after, PHASE_SECONDS);
    const y = before ? await throughput(before, PHASE_SECONDS) : null;
    rounds.push({ after: x, before: y });
  }
  const dAfter = p50(rounds.map((r) => r.after));
  const dBefore = before ? p50(rounds.map((r) => r.before!)) : Number.NaN;
  const dRatio = before ? p50(rounds.map((r) => r.after / r.before!)) : Number.NaN;

  const names = servers.map((s) => s.name);
  /** A cell of a scenario that did not run: '-'. */
  const row = (label: string, f: (n: string) => string, goal: string) => [
    label,
    ...names.map((n) => {
      try {
        return f(n);
      } catch {
        return '-';
      }
    }),
    goal,
  ];
  const md = [
    `${SLOTS} slots, one worker, native engine, model ${path.basename(modelPath)}; A's requests ${LONG_TOKENS} tokens, B's and the interactive stream's ${SHORT_TOKENS}. Figures from one run; the load average at its start is in the line above.`,
    '',
    !/[abc]/.test(SCENARIOS)
      ? ''
      : table(
          ['', ...names, 'goal'],
          [
            row('(a) B TTFT p50, A = slots streams', (n) => fmt.ms(results[n]!.a!.ttftNoQueueMs), ''),
            row('(a) B TTFT p50, A = 4x slots streams', (n) => fmt.ms(results[n]!.a!.ttftFloodMs), ''),
            row('(a) ratio', (n) => fmt.num(results[n]!.a!.ratio, 2), '<= 1.5'),
            row(
              `(b) B's share of tokens over ${SECONDS} s (A 3x slots, B 1x)`,
              (n) => fmt.pct(results[n]!.b!.shareB),
              '45-55 %',
            ),
            row(
              '(c) interactive TTFT p50 idle / under batch load',
              (n) => `${fmt.ms(results[n]!.c!.idleTtftMs)} / ${fmt.ms(results[n]!.c!.busyTtftMs)}`,
              '',
            ),
            row(
              '(c) TTFT bound (1.5x idle + one decode step)',
              (n) => fmt.ms(results[n]!.c!.ttftBound),
              'busy <= bound',
            ),
            row(
              '(c) interactive tok/s idle / busy (ratio)',
              (n) =>
                `${fmt.num(results[n]!.c!.idleTokPerS)} / ${fmt.num(results[n]!.c!.busyTokPerS)} (${fmt.num(results[n]!.c!.tokRatio, 2)})`,
              '>= 0.8',
            ),
            row('(c) batch load tok/s meanwhile', (n) => fmt.num(results[n]!.c!.batchTokPerS), 'reported'),
            row(
              '(c) preemptions / interactive requests',
              (n) => `${results[n]!.c!.preempted} / ${results[n]!.c!.interactiveRequests}`,
              '',
            ),
          ],
        ),
    '',
    `(d) one tenant, ${2 * SLOTS} streams, ${ROUNDS} interleaved rounds of ${PHASE_SECONDS} s: ${fmt.num(dAfter)} tok/s${before ? ` vs ${fmt.num(dBefore)} tok/s before; median ratio after/before ${fmt.num(dRatio, 3)} (goal >= 0.98)` : ' (no baseline given)'}.`,
  ].join('\n');
  recordResults(
    'fairness',
    'Fair share and priority between tenants',
    { slots: SLOTS, seconds: SECONDS, phaseSeconds: PHASE_SECONDS, results, rounds },
    md,
  );
} finally {
  agent.destroy();
  await Promise.all(servers.map((s) => s.hearth.stop()));
}
