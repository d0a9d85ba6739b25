import type { ChatMessage, RawPrompt } from '../protocol/chat-request.ts';

/**
 * A lower bound of a chat prompt's token count from its bytes alone, so the main thread can refuse a
 * prompt that cannot fit the context without tokenizing it (O(bytes), no allocation).
 *
 * Sound because no token covers more bytes of text than the longest piece of its vocabulary, measured in
 * the UTF-8 bytes of the piece as the GGUF stores it (`maxTokenBytes`; a stored piece is never shorter
 * than the text it matches: SentencePiece writes a space as the 3-byte U+2581, byte-level BPE one byte as
 * a 1- or 2-byte character, byte-fallback tokens as "<0xAB>"), and because the templated prompt contains
 * the text of every user and system message, trimmed at most. Other roles are not counted: templates may
 * drop parts of them (e.g. earlier reasoning of assistant turns).
 */
export function promptTokensAtLeast(messages: readonly ChatMessage[], maxTokenBytes: number): number {
  let bytes = 0;
  for (const m of messages) if (m.role === 'user' || m.role === 'system') bytes += Buffer.byteLength(m.content.trim());
  return Math.ceil(bytes / Math.max(1, maxTokenBytes));
}

/** promptTokensAtLeast for a raw prompt: its whole text is in the prompt (token ids: their exact count). */
export function rawPromptTokensAtLeast(prompt: RawPrompt, maxTokenBytes: number): number {
  if (typeof prompt !== 'string') return prompt.length;
  return Math.ceil(Buffer.byteLength(prompt) / Math.max(1, maxTokenBytes));
}
