/**
 * bench:hearth-ab: Hearth against itself with extra serve flags (a setting's A/B), in interleaved rounds on one
 * machine: streaming clients in a closed loop, max_tokens 128, greedy, a prompt of its own per request (as
 * bench:gpu's), the same model and slots on both sides. Prints tok/s and TTFT p50 per round, their medians, and the
 * ratio B / A. No results are recorded: it decides a default, the benches that record figures measure it.
 *
 *   npm run bench:hearth-ab -- --model FILE --b-args="--prompt-ride-tokens 64" [--a-args="FLAGS"] [--clients 64]
 *       [--slots 64] [--rounds 4] [--duration 10] [--cpu-kernels native] [--args="FLAGS"]
 *
 * --args go to both sides, e.g. --args="--threads 2": the thread count each start calibrates can differ between
 * starts on a small model, which would show as noise between rounds.
 */
import { parseArgs } from 'node:util';
import { modelReadyFields, startBenchHearth } from './lib/servers.ts';
import { closedLoop } from './lib/closed-loop.ts';
import { describeMachine, machineLine } from './lib/machine.ts';
import { percentile } from './lib/stats.ts';
import { makeAgent, streamTimed } from './lib/timed-sse.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    args: { type: 'string', default: '' },
    'a-args': { type: 'string', default: '' },
    'b-args': { type: 'string' },
    clients: { type: 'string', default: '64' },
    slots: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '10' },
    'cpu-kernels': { type: 'string', default: 'native' },
  },
});
if (!values.model || values['b-args'] === undefined)
  throw new Error(
    'usage: npm run bench:hearth-ab -- --model FILE --b-args="FLAGS" [--a-args="FLAGS"] [...] (the = keeps flags as a value)',
  );
const clients = Number(values.clients);
const slots = Number(values.slots ?? values.clients);
const rounds = Number(values.rounds);
const durationS = Number(values.duration);
const sides = { A: values['a-args'], B: values['b-args'] } as const;
const split = (flags: string) => flags.split(' ').filter(Boolean);

interface Round {
  tokPerS: number;
  ttftP50: number;
  /** Compute threads the start used (`--threads 0` calibrates them: two starts of one side can differ). */
  threads: unknown;
}

async function measure(flags: string): Promise<Round> {
  const hearth = await startBenchHearth(
    [
      ...['--model', values.model!, '--model-id', 'local/ab', '--engine', 'native', '--workers', '1'],
      ...['--slots', String(slots), '--context-size', '512', '--cpu-kernels', values['cpu-kernels']],
      ...split(values.args),
      ...split(flags),
    ],
    {},
  );
  const threads = modelReadyFields(hearth)['threads'];
  const agent = makeAgent(clients);
  try {
    const target = {
      baseUrl: hearth.baseUrl,
      path: '/api/inference/v1/chat/completions',
      headers: { authorization: `Bearer ${hearth.key}` },
    };
    const request = (content: string, maxTokens: number) => ({
      model: 'local/ab',
      messages: [{ role: 'user', content }],
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    await streamTimed(target, request('warm-up', 8), agent, 60_000);
    let tokens = 0;
    const ttft: number[] = [];
    const started = performance.now();
    await closedLoop({ clients, durationS }, async (n, client) => {
      const r = await streamTimed(target, request(`Request ${client}-${n}: tell me a story.`, 128), agent, 120_000);
      tokens += r.completionTokens ?? 0;
      if (Number.isFinite(r.firstTokenMs)) ttft.push(r.firstTokenMs);
    });
    return { tokPerS: tokens / ((performance.now() - started) / 1000), ttftP50: percentile(ttft, 50), threads };
  } finally {
    agent.destroy();
    await hearth.stop();
  }
}

console.log(machineLine(describeMachine()));
console.log(
  `model ${values.model}, ${clients} clients, ${slots} slots, both "${values.args}"; A: "${sides.A}", B: "${sides.B}"`,
);
const results: Record<'A' | 'B', Round[]> = { A: [], B: [] };
for (let round = 1; round <= rounds; round++) {
  for (const side of round % 2 === 1 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
    const r = await measure(sides[side]);
    results[side].push(r);
    console.log(
      `round ${round} ${side}: ${r.tokPerS.toFixed(0)} tok/s, TTFT p50 ${r.ttftP50.toFixed(1)} ms, ${String(r.threads)} threads`,
    );
  }
}
const median = (side: 'A' | 'B', key: 'tokPerS' | 'ttftP50') =>
  percentile(
    results[side].map((r) => r[key]),
    50,
  );
console.log(
  `medians: A ${median('A', 'tokPerS').toFixed(0)} tok/s, TTFT p50 ${median('A', 'ttftP50').toFixed(1)} ms | ` +
    `B ${median('B', 'tokPerS').toFixed(0)} tok/s, TTFT p50 ${median('B', 'ttftP50').toFixed(1)} ms | ` +
    `B / A tok/s ${(median('B', 'tokPerS') / median('A', 'tokPerS')).toFixed(3)}`,
);
