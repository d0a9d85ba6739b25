/**
 * Two load scenarios of `npm run bench:engine`, for any OpenAI-compatible streaming server:
 *  - smoothDecode: `decoders` streams decoding, then one long prompt arrives. Reports the decoders'
 *    median gap between content events before it, their longest gap while it is prefilled (from its
 *    sending to its first token, plus one median gap), the ratio of the two, the same per token (the
 *    decoders ask for logprobs, which say how many tokens each event carries), and the long prompt's TTFT.
 *  - floodPace: `streams` streams decoding for `durationS`, with and without an HTTP flood (the
 *    autocannon CLI, a separate process, `floodConnections` connections on `floodPath`, no credentials)
 *    on the same server; the pace ratio is tokens/s under the flood / tokens/s without.
 */
import { spawn } from 'node:child_process';
import type http from 'node:http';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { percentile } from './stats.ts';
import { closedLoop } from './closed-loop.ts';
import { makeAgent, type StreamTarget, streamTimed, type TimedStream } from './timed-sse.ts';

export interface ScenarioServer {
  stream: StreamTarget;
  /** A streaming chat-completions body for these messages (model, stream, temperature 0 ...). */
  body(messages: { role: string; content: string }[], maxTokens: number): Record<string, unknown>;
}

const ROOT = resolve(import.meta.dirname, '../..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Times of a stream's content events (ms, performance.now() clock). */
function eventTimes(r: TimedStream): number[] {
  if (!Number.isFinite(r.firstTokenMs)) return [];
  const out = [r.startedAt + r.firstTokenMs];
  for (const g of r.gapsMs) out.push(out.at(-1)! + g);
  return out;
}

export interface SmoothResult {
  decoders: number;
  longPromptTokens: number | null;
  longTtftMs: number;
  /** Median gap between the decoders' content events in the plain-decoding window (see maxGapBeforeMs). */
  medianGapMs: number;
  /** Longest gap of any decoder whose interval overlaps the long prompt's prefill window. */
  maxGapDuringMs: number;
  /** 90th percentile of the decoders' gaps overlapping the prefill window. */
  p90GapDuringMs: number;
  /**
   * The noise floor: the longest gap of any decoder in the plain-decoding window, from the moment every
   * decoder reached its pace (their own prompts prefilled) until the long prompt was sent (PLAIN_WINDOW_MS).
   */
  maxGapBeforeMs: number;
  /** maxGapDuringMs / medianGapMs (the target: <= 2). */
  gapRatio: number;
  /**
   * The same per token: a content event that carries m tokens after a gap of g counts as m gaps of g / m
   * (the decoders ask for logprobs, one entry per token). A token the server holds back (its text could
   * begin a stop string) arrives with the next one: a long gap between content events but not between
   * decode steps. NaN where the server sent no per-token logprobs.
   */
  tokenGapRatio: number;
  maxTokenGapDuringMs: number;
  errors: number;
}

/** See the file comment. `longPrompt` should be ~1,500 tokens and unique per call (no prefix cache hit). */
/** Plain decoding between the decoders reaching their pace and the long prompt: the median and the noise floor. */
const PLAIN_WINDOW_MS = 5000;

export async function smoothDecode(
  s: ScenarioServer,
  o: { decoders: number; decoderMaxTokens: number; longPrompt: string; warmMs?: number },
): Promise<SmoothResult> {
  const agent: http.Agent = makeAgent(o.decoders + 1);
  const started: Promise<TimedStream>[] = [];
  // The decoders are cut off (client disconnect) once the long prompt has its answer.
  const stop = new AbortController();
  const events = new Array<number>(o.decoders).fill(0);
  for (let i = 0; i < o.decoders; i++) {
    const body = {
      ...s.body([{ role: 'user', content: `Decoder ${i}: tell me a long story about the sea.` }], o.decoderMaxTokens),
      logprobs: true,
    };
    started.push(
      streamTimed(s.stream, body, agent, 600_000, stop.signal, () => {
        events[i]!++;
      }),
    );
  }
  // Every decoder at its steady pace (10 content events each) before the long prompt arrives; at most a minute.
  const warmUntil = performance.now() + (o.warmMs ?? 60_000);
  while (events.some((n) => n < 10) && performance.now() < warmUntil) await sleep(50);
  // Plain decoding only: the median gap and the noise floor (maxGapBeforeMs) come from here.
  const plainFrom = performance.now();
  await sleep(PLAIN_WINDOW_MS);
  const sentAt = performance.now();
  const long = await streamTimed(s.stream, s.body([{ role: 'user', content: o.longPrompt }], 4), agent);
  await sleep(1000);
  stop.abort();
  const decoders = await Promise.all(started);
  agent.destroy();
  const firstAt = sentAt + (Number.isFinite(long.firstTokenMs) ? long.firstTokenMs : long.totalMs);
  const before: number[] = [];
  for (const d of decoders) {
    const t = eventTimes(d);
    for (let i = 1; i < t.length; i++) if (t[i - 1]! >= plainFrom && t[i]! <= sentAt) before.push(t[i]! - t[i - 1]!);
  }
  const median = percentile(before, 50);
  let maxDuring = 0;
  const during: number[] = [];
  // Per token (see tokenGapRatio): only where every content event said how many tokens it carries.
  const perToken = decoders.every((d) => d.gapTokens.length === d.gapsMs.length && d.gapsMs.length > 0);
  const tokenBefore: number[] = [];
  let maxTokenDuring = 0;
  for (const d of decoders) {
    const t = eventTimes(d);
    for (let i = 1; i < t.length; i++) {
      const gap = t[i]! - t[i - 1]!;
      const tokens = perToken ? d.gapTokens[i - 1]! : 1;
      if (t[i - 1]! >= plainFrom && t[i]! <= sentAt) for (let k = 0; k < tokens; k++) tokenBefore.push(gap / tokens);
      // A gap overlapping [sentAt, firstAt + median] is one the long prompt may have caused.
      if (t[i]! > sentAt && t[i - 1]! < firstAt + median) {
        maxDuring = Math.max(maxDuring, gap);
        maxTokenDuring = Math.max(maxTokenDuring, gap / tokens);
        during.push(gap);
      }
    }
  }
  const tokenMedian = percentile(tokenBefore, 50);
  return {
    decoders: o.decoders,
    longPromptTokens: long.promptTokens,
    longTtftMs: long.firstTokenMs,
    medianGapMs: median,
    maxGapDuringMs: maxDuring,
    p90GapDuringMs: percentile(during, 90),
    maxGapBeforeMs: before.length > 0 ? Math.max(...before) : Number.NaN,
    gapRatio: median > 0 ? maxDuring / median : Number.NaN,
    tokenGapRatio: perToken && tokenMedian > 0 ? maxTokenDuring / tokenMedian : Number.NaN,
    maxTokenGapDuringMs: perToken ? maxTokenDuring : Number.NaN,
    errors: [long, ...decoders].filter((r) => !r.ok && r.error !== 'aborted').length,
  };
}

export interface FloodResult {
  streams: number;
  quietTokPerS: number;
  floodTokPerS: number;
  /** floodTokPerS / quietTokPerS. */
  paceRatio: number;
  floodRequests: number;
  floodStatus: Record<string, number>;
  errors: number;
}

async function paced(
  s: ScenarioServer,
  streams: number,
  durationS: number,
  maxTokens: number,
): Promise<{ tokPerS: number; errors: number }> {
  const agent = makeAgent(streams);
  const t0 = performance.now();
  let tokens = 0;
  let errors = 0;
  await closedLoop({ clients: streams, durationS, atLeastOnce: true }, async (n) => {
    const r = await streamTimed(
      s.stream,
      s.body([{ role: 'user', content: `Pace ${n}: describe a winter morning.` }], maxTokens),
      agent,
    );
    if (r.ok) tokens += r.completionTokens ?? r.contentEvents;
    else errors++;
  });
  agent.destroy();
  return { tokPerS: tokens / ((performance.now() - t0) / 1000), errors };
}

/** See the file comment. */
export async function floodPace(
  s: ScenarioServer,
  o: { streams: number; durationS: number; maxTokens: number; floodUrl: string; floodConnections: number },
): Promise<FloodResult> {
  const quiet = await paced(s, o.streams, o.durationS, o.maxTokens);
  const bin = join(ROOT, 'node_modules/.bin/autocannon');
  // autocannon prints its summary only when its duration ends (not on SIGINT): it runs through the
  // streams' measured window plus a margin for their last requests, and is waited for.
  const flood = spawn(
    bin,
    ['-j', '-c', String(o.floodConnections), '-d', String(Math.ceil(o.durationS + 6)), o.floodUrl],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  flood.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<void>((r) => flood.on('exit', () => r()));
  await sleep(1500); // the flood is at full rate before the streams start
  const loud = await paced(s, o.streams, o.durationS, o.maxTokens);
  await Promise.race([exited, sleep(30_000)]);
  if (flood.exitCode === null && flood.signalCode === null) flood.kill('SIGKILL');
  let floodRequests = 0;
  const floodStatus: Record<string, number> = {};
  try {
    const j = JSON.parse(out) as { requests?: { total?: number }; statusCodeStats?: Record<string, { count: number }> };
    floodRequests = j.requests?.total ?? 0;
    for (const [k, v] of Object.entries(j.statusCodeStats ?? {})) floodStatus[k] = v.count;
  } catch {
    /* killed before its summary */
  }
  return {
    streams: o.streams,
    quietTokPerS: quiet.tokPerS,
    floodTokPerS: loud.tokPerS,
    paceRatio: loud.tokPerS / quiet.tokPerS,
    floodRequests,
    floodStatus,
    errors: quiet.errors + loud.errors,
  };
}
