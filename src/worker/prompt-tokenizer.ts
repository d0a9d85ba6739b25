import { type LlamaModel, type LlamaText, SpecialToken, SpecialTokensText, type Token } from 'node-llama-cpp';

/** The prompt has at least `atLeastTokens` tokens, more than the limit it was tokenized against (tokenizing stopped there). */
export class PromptTooLong extends Error {
  constructor(readonly atLeastTokens: number) {
    super(`the prompt has at least ${atLeastTokens} tokens`);
    this.name = 'PromptTooLong';
  }
}

/** A raw prompt's token id is not in the model's vocabulary (the request's fault: a 400 naming `prompt`). */
export class InvalidPromptToken extends Error {
  constructor(readonly vocabularySize: number) {
    super(`a prompt token id is outside the vocabulary (0..${vocabularySize - 1})`);
    this.name = 'InvalidPromptToken';
  }
}

/** Length (UTF-16 units) of the text tokenized per llama.cpp call; a piece is cut only where that is sound (see below). */
const PIECE_LENGTH = 1024;
/** The tokenizer yields to the worker's event loop after this much work, so other slots' text keeps flowing. */
const SLICE_MS = 4;

/**
 * Tokenizes a templated prompt in a model worker (its JS thread only), linear in the prompt's length,
 * time-sliced, and bounded by a token limit.
 *
 * Why: llama.cpp's SentencePiece tokenizer (this release) reserves its output vector to the exact size for
 * every character that falls back to bytes (`resegment`, `output.reserve(output.size() + n)`), which defeats
 * the vector's geometric growth: each such character copies the whole output so far, so a prompt of characters
 * outside the vocabulary (emoji, most CJK on small vocabularies) costs quadratic time in one synchronous call
 * (150,000 emoji: 9 to 36 s on the worker's thread, stalling every stream it serves).
 *
 * How: text is cut into pieces of about PIECE_LENGTH before a character that no vocabulary piece contains.
 * Such a character can never be part of a merged token, so no token spans the cut, and the pieces'
 * tokens concatenated are the whole text's tokens; each piece restarts llama.cpp's output vector, so the
 * cost is linear. Every piece is tokenized without a leading space, as node-llama-cpp's LlamaText does. Cutting is done only for SentencePiece ("llama") vocabularies, where the
 * cost is quadratic and the cut is sound; other tokenizers take the text in one call. Tokenizing stops
 * with PromptTooLong as soon as the count passes the limit, so an over-long prompt costs only the limit's worth.
 */
export class PromptTokenizer {
  /** Code points of the vocabulary's pieces (SentencePiece vocabularies only); null = never cut. */
  private readonly vocabularyChars: Set<number> | null;

  constructor(private readonly model: LlamaModel) {
    const tokenizer = (model.fileInfo.metadata as { tokenizer?: { ggml?: { model?: unknown; tokens?: unknown } } })
      .tokenizer?.ggml;
    this.vocabularyChars =
      tokenizer?.model === 'llama' && Array.isArray(tokenizer.tokens)
        ? codePointsOf(tokenizer.tokens as string[])
        : null;
  }

  /**
   * The prompt's tokens (what `text.tokenize(model.tokenizer)` returns), or PromptTooLong once more than
   * `limit` tokens are found. Resolves on the worker's thread, yielding to its event loop between pieces.
   */
  async tokenize(text: LlamaText, limit: number): Promise<Uint32Array> {
    const out: Token[] = [];
    let deadline = performance.now() + SLICE_MS;
    const take = async (tokens: readonly Token[]) => {
      for (const t of tokens) out.push(t);
      if (out.length > limit) throw new PromptTooLong(out.length);
      if (performance.now() >= deadline) {
        await new Promise<void>((r) => setImmediate(r));
        deadline = performance.now() + SLICE_MS;
      }
    };
    // As LlamaText.tokenize: plain text is gathered up to the next special token and tokenized without a
    // leading space ('trimLeadingSpace'); special-token text is trimmed once anything precedes it.
    let pending = '';
    const flush = async () => {
      const text = pending;
      pending = '';
      if (text !== '')
        for (const piece of this.pieces(text)) await take(this.model.tokenize(piece, false, 'trimLeadingSpace'));
    };
    for (const value of text.values) {
      if (value instanceof SpecialToken) {
        await flush();
        await take(value.tokenize(this.model.tokenizer));
      } else if (value instanceof SpecialTokensText) {
        const preceded = out.length > 0 || pending !== '';
        await flush();
        await take(value.tokenize(this.model.tokenizer, preceded));
      } else {
        pending += value;
      }
    }
    await flush();
    return Uint32Array.from(out);
  }

  /** Cuts `text` before characters outside the vocabulary, into pieces of about PIECE_LENGTH UTF-16 units. */
  private *pieces(text: string): Generator<string> {
    const chars = this.vocabularyChars;
    if (chars === null || text.length <= PIECE_LENGTH) {
      yield text;
      return;
    }
    let start = 0;
    for (let i = PIECE_LENGTH; i < text.length;) {
      const cp = text.codePointAt(i)!;
      if (!chars.has(cp) && !isWhitespace(cp) && !isLowSurrogate(text.charCodeAt(i))) {
        yield text.slice(start, i);
        start = i;
        i += PIECE_LENGTH;
      } else {
        i += cp > 0xffff ? 2 : 1;
      }
    }
    yield text.slice(start);
  }
}

function codePointsOf(pieces: readonly string[]): Set<number> {
  const set = new Set<number>();
  for (const p of pieces) for (const c of p) set.add(c.codePointAt(0)!);
  return set;
}

const isWhitespace = (cp: number) => cp === 0x20 || (cp >= 0x09 && cp <= 0x0d) || cp === 0xa0 || cp === 0x2581;
const isLowSurrogate = (u: number) => u >= 0xdc00 && u <= 0xdfff;
