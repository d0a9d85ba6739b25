import { randomBytes } from 'node:crypto';
import type { ChatDelta, TokenLogprob } from './chat-delta.ts';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-call-syntax.ts';

/** `call_` + 24 url-safe random chars, like OpenAI's tool-call ids. */
export function newToolCallId(): string {
  return `call_${randomBytes(18).toString('base64url')}`;
}

/** `{"name": "<name>", "arguments": ` at the start of a call body (whitespace as JSON allows). */
const CALL_HEAD = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*/;
/** What may end the arguments before `</tool_call>`: the body's closing brace and whitespace. */
const BODY_END = /\s*\}\s*$/;
/** A call head never needs more than this many characters; past it the body is parsed whole at its end. */
const MAX_HEAD_CHARS = 512;

/** Whether `text` is one whole JSON value. */
function isCompleteJson(text: string): boolean {
  if (text.trim() === '') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/**
 * Turns a model's completion text, as it streams, into ChatDeltas: text outside `<tool_call>` blocks stays
 * content; each block becomes a tool call `index` with a fresh `call_...` id, whose first fragment carries
 * the id and name and whose later fragments carry the arguments JSON text as it arrives (OpenAI's streaming
 * shape). Feeding the same text in any split gives the same calls and content.
 *
 * A block whose head names no declared function, or whose body is not `{"name", "arguments"}`, is given back
 * as content. Whitespace around calls is dropped. Arguments are passed through as the model wrote them:
 * with a grammar (tool_choice required / named) they are valid; with `auto` they may not be, as with OpenAI.
 * One instance per completion; main thread.
 */
export class ToolCallStreamParser {
  private state: 'text' | 'head' | 'args' = 'text';
  private buffer = '';
  /** Whitespace at the end of content so far, held until we know whether a call follows. */
  private pendingSpace = '';
  private calls = 0;
  private argsStarted = false;
  /** The arguments text of the current call sent so far (to judge, at the end, what a cut call's held tail is). */
  private args = '';

  constructor(
    private readonly declared: ReadonlySet<string> | null = null,
    private readonly newId: () => string = newToolCallId,
  ) {}

  /** Tool calls started so far. */
  get callCount(): number {
    return this.calls;
  }

  /** Feeds more completion text; `logprobs` (of this text) ride on the first content delta it yields. */
  push(text: string, logprobs?: TokenLogprob[]): ChatDelta[] {
    this.buffer += text;
    const out: ChatDelta[] = [];
    this.drain(out, false);
    return this.attach(out, logprobs);
  }

  /** The completion ended: flushes what was held back (an unfinished call's text stays as it is). */
  end(): ChatDelta[] {
    const out: ChatDelta[] = [];
    this.drain(out, true);
    if (this.state === 'head') this.content(out, TOOL_CALL_OPEN + this.buffer);
    else if (this.state === 'args') this.endCutCall(out);
    else this.content(out, this.buffer);
    this.buffer = '';
    if (this.calls === 0 && this.pendingSpace !== '') out.push({ type: 'content', text: this.pendingSpace });
    this.pendingSpace = '';
    this.state = 'text';
    return out;
  }

  private attach(out: ChatDelta[], logprobs: TokenLogprob[] | undefined): ChatDelta[] {
    if (logprobs === undefined) return out;
    const first = out.find((d) => d.type === 'content');
    if (first && first.type === 'content') first.logprobs = logprobs;
    return out;
  }

  /** Content text; trailing whitespace is held back until more content comes (dropped before a call). */
  private content(out: ChatDelta[], text: string): void {
    const trimmed = text.replace(/\s+$/, '');
    if (trimmed === '') {
      this.pendingSpace += text;
      return;
    }
    out.push({ type: 'content', text: this.pendingSpace + trimmed });
    this.pendingSpace = text.slice(trimmed.length);
  }

  private drain(out: ChatDelta[], atEnd: boolean): void {
    for (;;) {
      if (this.state === 'text') {
        const at = this.buffer.indexOf(TOOL_CALL_OPEN);
        if (at < 0) {
          if (atEnd) return;
          const keep = partialTagSuffix(this.buffer, TOOL_CALL_OPEN);
          this.content(out, this.buffer.slice(0, this.buffer.length - keep));
          this.buffer = this.buffer.slice(this.buffer.length - keep);
          return;
        }
        this.content(out, this.buffer.slice(0, at));
        this.buffer = this.buffer.slice(at + TOOL_CALL_OPEN.length);
        this.state = 'head';
      } else if (this.state === 'head') {
        const head = CALL_HEAD.exec(this.buffer);
        const close = this.buffer.indexOf(TOOL_CALL_CLOSE);
        if (head !== null && (close < 0 || head[0].length <= close)) {
          const name = this.decodeName(head[1]!);
          if (name === null) {
            this.rejectHead(out);
            continue;
          }
          out.push({ type: 'tool_call', index: this.calls, id: this.newId(), name, arguments: '' });
          this.calls++;
          this.pendingSpace = '';
          this.buffer = this.buffer.slice(head[0].length);
          this.state = 'args';
          this.argsStarted = false;
          this.args = '';
        } else if (close >= 0) {
          this.wholeCall(out, this.buffer.slice(0, close));
          this.buffer = this.buffer.slice(close + TOOL_CALL_CLOSE.length);
          this.state = 'text';
        } else {
          if (this.buffer.length > MAX_HEAD_CHARS && !atEnd) this.rejectHead(out);
          else return;
        }
      } else {
        if (!this.argsStarted) {
          // Whitespace after `"arguments":` is not part of the arguments, however the text was split.
          this.buffer = this.buffer.replace(/^\s+/, '');
          if (this.buffer === '') return;
          this.argsStarted = true;
        }
        const close = this.buffer.indexOf(TOOL_CALL_CLOSE);
        if (close >= 0) {
          const args = this.buffer.slice(0, close).replace(BODY_END, '');
          if (args !== '') out.push({ type: 'tool_call', index: this.calls - 1, arguments: args });
          this.buffer = this.buffer.slice(close + TOOL_CALL_CLOSE.length);
          this.state = 'text';
          continue;
        }
        if (atEnd) return;
        const partial = partialTagSuffix(this.buffer, TOOL_CALL_CLOSE);
        const before = this.buffer.slice(0, this.buffer.length - partial);
        const endMatch = BODY_END.exec(before);
        const trailingSpace = /\s*$/.exec(before)![0].length;
        const hold = (endMatch ? endMatch[0].length : trailingSpace) + partial;
        const emit = this.buffer.slice(0, this.buffer.length - hold);
        if (emit !== '') {
          out.push({ type: 'tool_call', index: this.calls - 1, arguments: emit });
          this.args += emit;
        }
        this.buffer = this.buffer.slice(this.buffer.length - hold);
        return;
      }
    }
  }

  /**
   * The completion ended inside a call (max_tokens): what was held back is the body's closing brace, whitespace
   * and the start of `</tool_call>`, or the arguments' own last characters. When the arguments sent so far are
   * complete JSON, the held text is the wrapper's and is dropped (clients parse `arguments` as JSON); otherwise
   * the call was cut inside its arguments and the held text, less any start of the closing tag, is theirs.
   */
  private endCutCall(out: ChatDelta[]): void {
    const partial = partialTagSuffix(this.buffer, TOOL_CALL_CLOSE);
    const rest = this.buffer.slice(0, this.buffer.length - partial).replace(/\s+$/, '');
    this.buffer = '';
    if (rest === '' || isCompleteJson(this.args)) return;
    out.push({ type: 'tool_call', index: this.calls - 1, arguments: rest });
    this.args += rest;
  }

  /** A declared function's name from the head's JSON string, or null. */
  private decodeName(raw: string): string | null {
    let name: string;
    try {
      name = JSON.parse(`"${raw}"`) as string;
    } catch {
      return null;
    }
    return this.declared === null || this.declared.has(name) ? name : null;
  }

  /** The text after `<tool_call>` is not a call: give the tag back as content and go on scanning after it. */
  private rejectHead(out: ChatDelta[]): void {
    this.content(out, TOOL_CALL_OPEN);
    this.state = 'text';
  }

  /** A complete body whose head did not match the streaming form (e.g. "arguments" first). */
  private wholeCall(out: ChatDelta[], body: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = null;
    }
    const call = parsed as { name?: unknown; arguments?: unknown } | null;
    const name =
      typeof call?.name === 'string' && (this.declared === null || this.declared.has(call.name)) ? call.name : null;
    if (call === null || typeof call !== 'object' || name === null || call.arguments === undefined) {
      this.content(out, TOOL_CALL_OPEN + body + TOOL_CALL_CLOSE);
      return;
    }
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    out.push({ type: 'tool_call', index: this.calls, id: this.newId(), name, arguments: '' });
    out.push({ type: 'tool_call', index: this.calls, arguments: args });
    this.calls++;
    this.pendingSpace = '';
  }
}
