import { type ChatHistoryItem, type ChatWrapper, GeneralChatWrapper, type LlamaModel, type LlamaText, resolveChatWrapper } from 'node-llama-cpp';
import type { ChatMessage } from '../protocol/chat-request.ts';
import { PromptTokenizer } from './prompt-tokenizer.ts';

/**
 * Applies the model's chat template next to the model (architecture habit 1): the model's own Jinja
 * template or a specialised node-llama-cpp wrapper resolved from its metadata, falling back to
 * GeneralChatWrapper for models that have none (base models such as stories260K).
 * Lives in a worker thread; the model may be vocabulary-only.
 */
export class PromptBuilder {
  readonly wrapper: ChatWrapper;
  /** Plain-text stop triggers of the template (e.g. "\n\n### Human:" for the general wrapper). */
  private readonly templateStops = new Map<string, string[]>();
  private readonly tokenizer: PromptTokenizer;

  constructor(private readonly model: LlamaModel) {
    this.tokenizer = new PromptTokenizer(model);
    this.wrapper = resolveChatWrapper(model, { fallbackToOtherWrappersOnJinjaError: true }) ?? new GeneralChatWrapper();
  }

  get wrapperName(): string {
    return this.wrapper.wrapperName;
  }

  /** Rejects with PromptTooLong once the prompt passes `maxTokens` (tokenizing stops there; default: no limit). */
  async build(messages: readonly ChatMessage[], maxTokens = Number.MAX_SAFE_INTEGER): Promise<{ tokens: Uint32Array; stops: string[] }> {
    const history: ChatHistoryItem[] = messages.map((m): ChatHistoryItem =>
      m.role === 'system' ? { type: 'system', text: m.content }
        : m.role === 'user' ? { type: 'user', text: m.content }
        : { type: 'model', response: [m.content] });
    history.push({ type: 'model', response: [] });
    const state = this.wrapper.generateContextState({ chatHistory: history });
    const tokens = await this.tokenizer.tokenize(state.contextText, maxTokens);
    return { tokens, stops: plainTriggers(state.stopGenerationTriggers) };
  }
}

/** Stop triggers that are pure text (special-token triggers are end-of-generation tokens, handled by the engine). */
function plainTriggers(triggers: readonly LlamaText[]): string[] {
  const out: string[] = [];
  for (const t of triggers) {
    if (t.values.every((v) => typeof v === 'string')) {
      const s = t.values.join('');
      if (s.length > 0 && !out.includes(s)) out.push(s);
    }
  }
  return out;
}
