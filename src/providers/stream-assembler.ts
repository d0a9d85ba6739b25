import { CompletionBuilder } from '../protocol/completion-builder.ts';
import type { ChatCompletionChunk, FinishReason, Usage } from '../protocol/openai-types.ts';

/**
 * Turns a vendor stream's normalized events into OpenAI chunks with one id / created / model: the role
 * chunk goes out with the first content (or with the finish, for an empty answer), then content chunks,
 * then exactly one finish chunk and, when the client asked for include_usage and usage is known, one
 * usage chunk with empty `choices`. One per stream; not shared.
 */
export class StreamAssembler {
  private readonly builder: CompletionBuilder;
  private started = false;
  private finished = false;

  constructor(model: string, private readonly includeUsage: boolean) {
    this.builder = new CompletionBuilder(model);
  }

  content(text: string): ChatCompletionChunk[] {
    if (text === '' || this.finished) return [];
    const out = this.start();
    out.push(this.builder.chunk({ content: text }, null));
    return out;
  }

  finish(reason: FinishReason, usage: Usage | undefined): ChatCompletionChunk[] {
    if (this.finished) return [];
    this.finished = true;
    const out = this.start();
    out.push(this.builder.finishChunk(reason));
    if (this.includeUsage && usage !== undefined) out.push(this.builder.usageChunk(usage));
    return out;
  }

  private start(): ChatCompletionChunk[] {
    if (this.started) return [];
    this.started = true;
    return [this.builder.roleChunk()];
  }
}
