import { randomBytes } from 'node:crypto';
import type { ChatDelta, ChatFinishReason, ChatUsage } from './chat-delta.ts';

/**
 * Renders one answer's ChatDeltas as an Anthropic Messages API message and its streaming events, in the order
 * `@anthropic-ai/sdk`'s MessageStream accumulates them:
 *
 *   message_start (the message with empty content), ping,
 *   per content block: content_block_start, content_block_delta* (text_delta | thinking_delta | input_json_delta), content_block_stop
 *   message_delta (stop_reason, stop_sequence, usage), message_stop
 *
 * Text is a `text` block, reasoning (reasoning-split.ts) a `thinking` block (`thinking_delta`s; no signature:
 * Hearth signs nothing, so `signature` is ''); each tool call a `tool_use` block (id, name, input parsed from its arguments).
 * stop_reason: `end_turn`, `max_tokens`, `stop_sequence` (with `stop_sequence`), `tool_use`. The prompt's
 * token count is known only at the end: message_start says 0 input tokens and message_delta carries the count
 * (the SDK takes it from there). Pure (ids aside); one instance per answer; main thread.
 */

type Json = Record<string, unknown>;
export interface MessageEvent extends Json {
  type: string;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

interface TextBlock {
  type: 'text' | 'thinking';
  text: string;
}
interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  /** The arguments' JSON text as generated. */
  json: string;
}
type Block = TextBlock | ToolUseBlock;

const messageId = () => `msg_${randomBytes(18).toString('base64url')}`;

export class MessageRenderer {
  readonly id = messageId();
  private readonly blocks: Block[] = [];
  /** The block still receiving deltas (always the last of `blocks`), or null. */
  private open: Block | null = null;
  /** Chat tool-call index -> block index. */
  private readonly callBlock = new Map<number, number>();
  private stopReason: StopReason | null = null;
  private stopSequence: string | null = null;
  private usage: ChatUsage = { promptTokens: 0, completionTokens: 0 };

  constructor(private readonly model: string) {}

  /** message_start and a ping: what a committed stream opens with. */
  start(): MessageEvent[] {
    return [{ type: 'message_start', message: this.message() }, { type: 'ping' }];
  }

  /** The events for one delta (a finish closes the open block and ends the message). */
  push(d: ChatDelta): MessageEvent[] {
    const out: MessageEvent[] = [];
    if (d.type === 'content' || d.type === 'reasoning') {
      if (d.text === '') return out;
      const type = d.type === 'content' ? 'text' : 'thinking';
      let block = this.open;
      if (block?.type !== type) {
        this.close(out);
        block = { type, text: '' };
        this.openBlock(block, out);
      }
      (block as TextBlock).text += d.text;
      const delta =
        type === 'text' ? { type: 'text_delta', text: d.text } : { type: 'thinking_delta', thinking: d.text };
      out.push({ type: 'content_block_delta', index: this.blocks.length - 1, delta });
    } else if (d.type === 'tool_call') {
      if (d.id !== undefined) {
        this.close(out);
        const block: ToolUseBlock = { type: 'tool_use', id: d.id, name: d.name ?? '', json: '' };
        this.openBlock(block, out);
        this.callBlock.set(d.index, this.blocks.length - 1);
      }
      const at = this.callBlock.get(d.index);
      const block = at === undefined ? undefined : this.blocks[at];
      if (block?.type === 'tool_use' && d.arguments !== '') {
        block.json += d.arguments;
        out.push({
          type: 'content_block_delta',
          index: at,
          delta: { type: 'input_json_delta', partial_json: d.arguments },
        });
      }
    } else {
      this.close(out);
      this.stopReason = stopReasonOf(d.reason, d.stopSequence);
      this.stopSequence = this.stopReason === 'stop_sequence' ? (d.stopSequence ?? null) : null;
      if (d.usage !== undefined) this.usage = d.usage;
      out.push({
        type: 'message_delta',
        delta: { stop_reason: this.stopReason, stop_sequence: this.stopSequence },
        usage: { input_tokens: this.usage.promptTokens, output_tokens: this.usage.completionTokens },
      });
      out.push({ type: 'message_stop' });
    }
    return out;
  }

  /** The message as it stands (complete after the finish delta). */
  message(): Json {
    return {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: this.blocks.map(blockJson),
      stop_reason: this.stopReason,
      stop_sequence: this.stopSequence,
      usage: {
        input_tokens: this.usage.promptTokens,
        output_tokens: this.usage.completionTokens,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
      },
    };
  }

  private openBlock(block: Block, out: MessageEvent[]): void {
    this.blocks.push(block);
    this.open = block;
    const start =
      block.type === 'tool_use'
        ? { type: 'tool_use', id: block.id, name: block.name, input: {} }
        : blockJson({ type: block.type, text: '' });
    out.push({ type: 'content_block_start', index: this.blocks.length - 1, content_block: start });
  }

  private close(out: MessageEvent[]): void {
    if (this.open === null) return;
    this.open = null;
    out.push({ type: 'content_block_stop', index: this.blocks.length - 1 });
  }
}

function stopReasonOf(reason: ChatFinishReason, stopSequence: string | undefined): StopReason {
  if (reason === 'tool_calls') return 'tool_use';
  if (reason === 'length') return 'max_tokens';
  return stopSequence !== undefined ? 'stop_sequence' : 'end_turn';
}

/** A block as the message carries it: a tool call's `input` is its arguments parsed ({} when they are not a JSON object). */
function blockJson(block: Block): Json {
  if (block.type === 'tool_use')
    return { type: 'tool_use', id: block.id, name: block.name, input: parseInput(block.json) };
  return block.type === 'text'
    ? { type: 'text', text: block.text }
    : { type: 'thinking', thinking: block.text, signature: '' };
}

function parseInput(json: string): Json {
  try {
    const v: unknown = JSON.parse(json);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
  } catch {
    return {};
  }
}
