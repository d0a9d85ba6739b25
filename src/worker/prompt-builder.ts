import {
  type ChatWrapper,
  type ChatWrapperGeneratedContextState,
  ChatMLChatWrapper,
  GeneralChatWrapper,
  type LlamaModel,
  LlamaText,
  resolveChatWrapper,
  SpecialToken,
} from 'node-llama-cpp';
import type { ChatMessage, FunctionTool, RawPrompt } from '../protocol/chat-request.ts';
import { TOOL_CALL_OPEN } from '../protocol/tool-call-syntax.ts';
import { functionCallHistory, hermesTextHistory, toChatModelFunctions } from './chat-history.ts';
import { InvalidPromptToken, PromptTokenizer, PromptTooLong } from './prompt-tokenizer.ts';

/**
 * Applies the model's chat template next to the model (architecture habit 1): the model's own Jinja
 * template or a specialised node-llama-cpp wrapper resolved from its metadata, falling back to
 * GeneralChatWrapper for models that have none (base models such as stories260K).
 *
 * Tools (and tool calls / results in the history): when the wrapper itself writes calls in the Hermes
 * syntax of tool-call-syntax.ts (the model's Qwen 2.5 style Jinja template, through node-llama-cpp's
 * JinjaTemplateChatWrapper, or its Qwen wrapper), the template renders `tools`, `tool_calls` and `tool`
 * messages itself, as llama-server does. Otherwise Hearth's Hermes instructions and text go through the
 * model's template, or through ChatML when the model has no template at all (see chat-history.ts).
 * Lives in a worker thread; the model may be vocabulary-only.
 */
export class PromptBuilder {
  readonly wrapper: ChatWrapper;
  /** Whether `wrapper` renders function calls in the Hermes syntax Hearth parses back. */
  readonly wrapperSpeaksHermes: boolean;
  private readonly hasTemplate: boolean;
  private textToolWrapper: ChatWrapper | undefined;
  private readonly tokenizer: PromptTokenizer;

  constructor(private readonly model: LlamaModel) {
    this.tokenizer = new PromptTokenizer(model);
    this.wrapper = resolveChatWrapper(model, { fallbackToOtherWrappersOnJinjaError: true }) ?? new GeneralChatWrapper();
    this.hasTemplate = typeof model.fileInfo.metadata.tokenizer?.chat_template === 'string';
    this.wrapperSpeaksHermes = speaksHermes(this.wrapper);
  }

  get wrapperName(): string {
    return this.wrapper.wrapperName;
  }

  /** Which template renders a request with `tools` (for logs and tests). */
  get toolWrapperName(): string {
    return this.toolWrapper().wrapperName;
  }

  /**
   * Rejects with PromptTooLong once the prompt passes `maxTokens` (tokenizing stops there; default: no limit).
   * `suffix`: text after the rendered prompt (e.g. an empty thinking block that switches a model's thinking off).
   */
  async build(
    messages: readonly ChatMessage[],
    tools: readonly FunctionTool[] = [],
    maxTokens = Number.MAX_SAFE_INTEGER,
    suffix = '',
  ): Promise<{ tokens: Uint32Array; stops: string[] }> {
    const state = this.contextState(messages, tools);
    const text = suffix === '' ? state.contextText : LlamaText([state.contextText, suffix]);
    const tokens = await this.tokenizer.tokenize(text, maxTokens);
    return { tokens, stops: plainTriggers(state.stopGenerationTriggers) };
  }

  /**
   * A raw prompt's tokens (legacy completions), no template and no stop strings: text is tokenized as it is,
   * after the BOS token when the vocabulary asks for one (as llama-server's /completion); token ids are taken
   * as they are, or InvalidPromptToken for one outside the vocabulary. PromptTooLong past `maxTokens`.
   */
  async buildRaw(
    prompt: RawPrompt,
    maxTokens = Number.MAX_SAFE_INTEGER,
  ): Promise<{ tokens: Uint32Array; stops: string[] }> {
    if (typeof prompt !== 'string') {
      if (prompt.length > maxTokens) throw new PromptTooLong(prompt.length);
      const size = this.vocabularySize;
      if (size !== null && prompt.some((t) => t >= size)) throw new InvalidPromptToken(size);
      return { tokens: Uint32Array.from(prompt), stops: [] };
    }
    const text = this.model.tokens.shouldPrependBosToken
      ? LlamaText([new SpecialToken('BOS'), prompt])
      : LlamaText(prompt);
    return { tokens: await this.tokenizer.tokenize(text, maxTokens), stops: [] };
  }

  /** Tokens in the vocabulary, from the GGUF's token list (null when the file has none). */
  private get vocabularySize(): number | null {
    const tokens = (this.model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: unknown } } }).tokenizer?.ggml
      ?.tokens;
    return Array.isArray(tokens) ? tokens.length : null;
  }

  /** The prompt as text (special tokens written out), for logs and tests. */
  text(messages: readonly ChatMessage[], tools: readonly FunctionTool[] = []): string {
    return this.contextState(messages, tools).contextText.toString();
  }

  private contextState(
    messages: readonly ChatMessage[],
    tools: readonly FunctionTool[],
  ): ChatWrapperGeneratedContextState {
    const toolTraffic = tools.length > 0 || messages.some((m) => m.role === 'tool' || (m.toolCalls?.length ?? 0) > 0);
    const native = !toolTraffic || this.wrapperSpeaksHermes;
    const wrapper = native ? this.wrapper : this.toolWrapper();
    return wrapper.generateContextState(
      native
        ? {
            chatHistory: functionCallHistory(messages),
            ...(tools.length > 0
              ? { availableFunctions: toChatModelFunctions(tools), documentFunctionParams: true }
              : {}),
          }
        : { chatHistory: hermesTextHistory(messages, tools) },
    );
  }

  private toolWrapper(): ChatWrapper {
    if (this.wrapperSpeaksHermes || this.hasTemplate) return this.wrapper;
    this.textToolWrapper ??= new ChatMLChatWrapper();
    return this.textToolWrapper;
  }
}

function speaksHermes(wrapper: ChatWrapper): boolean {
  const call = wrapper.settings.functions.call;
  return (
    LlamaText(call.prefix).toString().includes(TOOL_CALL_OPEN) &&
    LlamaText(call.paramsPrefix).toString().includes('"arguments"')
  );
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
