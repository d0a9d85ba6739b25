/**
 * Turns generated tokens into text without ever emitting a broken UTF-8 sequence: tokens whose text ends
 * in an incomplete character (U+FFFD from a partial byte sequence) are held until the character completes
 * (at most `maxHeld` tokens, after which the text is emitted as is). `context` (e.g. the prompt's last tokens)
 * is what precedes the first token, so a word-start space on it is kept, as llama.cpp writes it.
 */
export class TokenTextDecoder {
  private pending: number[] = [];
  private readonly recent: number[];

  constructor(
    private readonly detokenize: (tokens: readonly number[], lastTokens: readonly number[]) => string,
    private readonly maxHeld = 4,
    context: readonly number[] = [],
  ) {
    this.recent = context.slice(-16);
  }

  push(token: number): string {
    this.pending.push(token);
    const text = this.detokenize(this.pending, this.recent);
    if (text.endsWith('\uFFFD') && this.pending.length < this.maxHeld) return '';
    for (const t of this.pending) this.recent.push(t);
    if (this.recent.length > 16) this.recent.splice(0, this.recent.length - 16);
    this.pending = [];
    return text;
  }
}
