import type { ChatDelta, ChatFinishReason, ChatUsage, TokenLogprob } from './chat-delta.ts';
import { type CompletionBuilder, makeUsage, toChatLogprobs, usageOf } from './completion-builder.ts';
import type { ChatCompletion, ChatToolCallObject } from './openai-types.ts';

/**
 * One answer collected from its deltas, for a JSON (non-streaming) reply: the text, the logprobs when the
 * producer gave any, and tool calls joined from their fragments (by index, in order of first appearance).
 * One per request; main thread.
 */
export class ChatAnswer {
  private text = '';
  private reasoning: string | undefined;
  private logprobs: TokenLogprob[] | null = null;
  private readonly toolCalls: ChatToolCallObject[] = [];
  private finishReason: ChatFinishReason | null = null;
  private usage: ChatUsage | undefined;

  push(delta: ChatDelta): void {
    switch (delta.type) {
      case 'content':
        this.text += delta.text;
        if (delta.logprobs !== undefined) (this.logprobs ??= []).push(...delta.logprobs);
        return;
      case 'reasoning':
        this.reasoning = (this.reasoning ?? '') + delta.text;
        return;
      case 'tool_call': {
        let call = this.toolCalls[delta.index];
        if (call === undefined) {
          call = { id: delta.id ?? '', type: 'function', function: { name: delta.name ?? '', arguments: '' } };
          this.toolCalls[delta.index] = call;
        } else {
          if (delta.id !== undefined && call.id === '') call.id = delta.id;
          if (delta.name !== undefined && call.function.name === '') call.function.name = delta.name;
        }
        call.function.arguments += delta.arguments;
        return;
      }
      case 'finish':
        this.finishReason = delta.reason;
        this.usage = delta.usage;
        return;
    }
  }

  get finished(): boolean {
    return this.finishReason !== null;
  }

  /** The chat.completion (content null when the answer is only tool calls; usage zeros when unknown). */
  completion(builder: CompletionBuilder): ChatCompletion {
    const toolCalls = this.toolCalls.filter((c) => c !== undefined);
    const content = this.text === '' && toolCalls.length > 0 ? null : this.text;
    return builder.completion(
      content,
      this.finishReason ?? 'stop',
      this.usage ? usageOf(this.usage) : makeUsage(0, 0),
      {
        toolCalls,
        logprobs: this.logprobs === null ? undefined : toChatLogprobs(this.logprobs),
        reasoning: this.reasoning,
      },
    );
  }
}
