import type { ChatDelta, ChatFinishReason, TokenLogprob } from './chat-delta.ts';
import { makeUsage, usageOf } from './completion-builder.ts';
import { newTextCompletionId, unixSeconds } from './ids.ts';
import type { Usage } from './openai-types.ts';
import { SSE_DONE, sseData } from './sse.ts';

/**
 * The legacy completions API's answer (`object: "text_completion"`), JSON or SSE, built from the deltas of one
 * generation per prompt. One answer has several choices when it had several prompts; their deltas arrive
 * interleaved, each tagged (ChoiceTag) with its choice, and a choice's end is a tagged empty content delta.
 * The closing `finish` delta (usage summed over the choices) ends the answer. One per request; main thread.
 */

/** What a delta of a several-choice answer carries beside ChatDelta (absent: choice 0, not an end). */
export interface ChoiceTag {
  choice?: number | undefined;
  /** Set on the empty content delta that ends `choice`. */
  end?: ChatFinishReason | undefined;
}

export type ChoiceDelta = ChatDelta & ChoiceTag;

/** OpenAI's legacy `choices[i].logprobs`. */
export interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Array<Record<string, number>>;
  text_offset: number[];
}

export type TextFinishReason = 'stop' | 'length';

export interface TextCompletionChoice {
  text: string;
  index: number;
  logprobs: LegacyLogprobs | null;
  finish_reason: TextFinishReason | null;
}

export interface TextCompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: TextCompletionChoice[];
  usage?: Usage;
}

interface ChoiceState {
  text: string;
  logprobs: LegacyLogprobs | null;
  finish: TextFinishReason | null;
  /** Characters of the choice's text so far (its echoed prompt included): the next token's text_offset. */
  offset: number;
}

export class TextCompletionRenderer {
  readonly id = newTextCompletionId();
  readonly created = unixSeconds();
  private readonly choices: ChoiceState[];
  private usage: Usage = makeUsage(0, 0);

  /**
   * `echoes[i]`: the text choice i starts with (its prompt when `echo`, else ''); one entry per prompt.
   * `logprobs`: whether the request asked for them (choices then carry a logprobs object, else null).
   */
  constructor(
    readonly model: string,
    private readonly echoes: readonly string[],
    private readonly logprobs: boolean,
    private readonly includeUsage: boolean,
  ) {
    this.choices = echoes.map((e) => ({
      text: e,
      logprobs: logprobs ? emptyLogprobs() : null,
      finish: null,
      offset: e.length,
    }));
  }

  /** JSON mode: takes every delta in order. */
  push(d: ChatDelta): void {
    const tagged = d as ChoiceDelta;
    if (d.type === 'finish') {
      if (d.usage !== undefined) this.usage = usageOf(d.usage);
      for (const c of this.choices) c.finish ??= finishOf(d.reason);
      return;
    }
    if (d.type !== 'content') return; // no tool calls on this API
    const c = this.choices[tagged.choice ?? 0];
    if (c === undefined) return;
    c.text += d.text;
    if (c.logprobs !== null && d.logprobs !== undefined) appendLogprobs(c.logprobs, d.logprobs, c);
    if (tagged.end !== undefined) c.finish = finishOf(tagged.end);
  }

  /** The JSON answer, after the finish delta. */
  completion(): TextCompletion {
    return {
      ...this.head(),
      choices: this.choices.map((c, index) => ({
        text: c.text,
        index,
        logprobs: c.logprobs,
        finish_reason: c.finish ?? 'stop',
      })),
      usage: this.usage,
    };
  }

  /** SSE text that opens the stream: each echoed prompt as its choice's first chunk (nothing without echo). */
  streamHead(): string {
    let out = '';
    this.echoes.forEach((e, index) => {
      if (e !== '') out += sseData(this.chunk({ text: e, index, logprobs: null, finish_reason: null }));
    });
    return out;
  }

  /** SSE text of one delta: a text chunk, a choice's finish chunk, or (finish) the usage chunk and [DONE]. */
  streamEvent(d: ChatDelta): string {
    const tagged = d as ChoiceDelta;
    if (d.type === 'finish') {
      let tail = '';
      // A producer that never ended its choices one by one (a single generation) ends them all here.
      this.choices.forEach((c, index) => {
        if (c.finish === null) {
          c.finish = finishOf(d.reason);
          tail += sseData(this.chunk({ text: '', index, logprobs: null, finish_reason: c.finish }));
        }
      });
      if (this.includeUsage && d.usage !== undefined)
        tail += sseData({ ...this.head(), choices: [], usage: usageOf(d.usage) });
      return tail + SSE_DONE;
    }
    if (d.type !== 'content') return '';
    const index = tagged.choice ?? 0;
    const c = this.choices[index];
    if (c === undefined) return '';
    let logprobs: LegacyLogprobs | null = null;
    if (this.logprobs && d.logprobs !== undefined && d.logprobs.length > 0) {
      logprobs = emptyLogprobs();
      appendLogprobs(logprobs, d.logprobs, c);
    }
    let out = '';
    if (d.text !== '' || logprobs !== null)
      out += sseData(this.chunk({ text: d.text, index, logprobs, finish_reason: null }));
    if (tagged.end !== undefined) {
      c.finish = finishOf(tagged.end);
      out += sseData(this.chunk({ text: '', index, logprobs: null, finish_reason: c.finish }));
    }
    return out;
  }

  private head() {
    return {
      id: this.id,
      object: 'text_completion' as const,
      created: this.created,
      model: this.model,
      system_fingerprint: null,
    };
  }

  private chunk(choice: TextCompletionChoice): TextCompletion {
    return { ...this.head(), choices: [choice] };
  }
}

const emptyLogprobs = (): LegacyLogprobs => ({ tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] });

/** Tool calls never happen on this API (no tools); anything but a cut is a stop. */
const finishOf = (reason: ChatFinishReason): TextFinishReason => (reason === 'length' ? 'length' : 'stop');

/** Appends tokens' entries; `at.offset` (characters of the choice's text before them) advances past each. */
function appendLogprobs(into: LegacyLogprobs, lps: readonly TokenLogprob[], at: { offset: number }): void {
  for (const lp of lps) {
    into.tokens.push(lp.token);
    into.token_logprobs.push(lp.logprob);
    const top = Object.create(null) as Record<string, number>; // a token may be '__proto__'
    for (const t of lp.top) if (!(t.token in top)) top[t.token] = t.logprob;
    into.top_logprobs.push(top);
    into.text_offset.push(at.offset);
    at.offset += lp.token.length;
  }
}
