import type { LlamaModel, Token } from 'node-llama-cpp';
import type { TokenPiece } from './utf8-state.ts';

/**
 * The exact bytes each token of a node-llama-cpp model writes, for the UTF-8 table of grammar jobs.
 * node-llama-cpp detokenizes to JavaScript strings, where bytes that are not valid UTF-8 on their own show as
 * U+FFFD. A token whose text has no U+FFFD wrote exactly that text's UTF-8. For the others (byte-fallback
 * tokens, byte-level BPE pieces of a character) the bytes come from the vocabulary's own token text: an SPM
 * byte token `<0xNN>`, or a byte-level BPE text read back through GPT-2's byte-to-character map; they must
 * decode to the same string node-llama-cpp shows, else the token's bytes count as unknown (never allowed):
 * so a token whose vocabulary text holds U+FFFD itself is never allowed (the native engine bans those too).
 * Runs once per model, on the worker thread that owns the model.
 */
export function llamaTokenPieces(model: LlamaModel): TokenPiece[] {
  const texts =
    (model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly string[] } } }).tokenizer?.ggml?.tokens ??
    [];
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // A word-start space on a token is dropped at the start of a text, so each token is shown after an
  // ordinary one and that one's text is cut off again.
  const before = model.tokenize('a', false);
  const beforeText = model.detokenize(before, false);
  const byteLevel = model.vocabularyType === 'bpe';
  const pieces: TokenPiece[] = [];
  for (let t = 0; t < texts.length; t++) {
    const token = t as Token;
    if (model.isEogToken(token)) {
      pieces.push('end');
      continue;
    }
    const after = beforeText === '' ? '' : model.detokenize([...before, token], false);
    const shown =
      beforeText !== '' && after.startsWith(beforeText)
        ? after.slice(beforeText.length)
        : model.detokenize([token], false);
    if (!shown.includes('\uFFFD')) {
      pieces.push(encoder.encode(shown));
      continue;
    }
    const bytes = tokenTextBytes(texts[t] ?? '', byteLevel);
    pieces.push(bytes && decoder.decode(bytes) === shown ? bytes : null);
  }
  return pieces;
}

/**
 * The bytes a vocabulary's token text stands for: a byte token `<0xNN>`, or with `byteLevel` (GPT-2 style BPE)
 * each character read back through the byte-to-character map; null when the text is neither.
 */
export function tokenTextBytes(text: string, byteLevel: boolean): Uint8Array | null {
  const byteToken = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
  if (byteToken) return Uint8Array.of(Number.parseInt(byteToken[1]!, 16));
  if (!byteLevel) return null;
  const out: number[] = [];
  for (const ch of text) {
    const b = BYTE_LEVEL.get(ch.codePointAt(0)!);
    if (b === undefined) return null;
    out.push(b);
  }
  return Uint8Array.from(out);
}

/** GPT-2's bytes_to_unicode, inverted: the character standing for each byte in byte-level BPE texts -> the byte. */
const BYTE_LEVEL: ReadonlyMap<number, number> = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map<number, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) map.set(printable(b) ? b : 256 + extra++, b);
  return map;
})();
