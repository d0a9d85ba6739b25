import { describe, expect, it } from 'vitest';
import { ApiError, contextLengthExceeded } from '../../../src/errors/index.ts';
import { COMPLETIONS_FIELDS, namingFieldsAs, RESPONSES_FIELDS } from '../../../src/inference/prompt-field-naming.ts';

describe('namingFieldsAs', () => {
  it("names each API's own fields in context_length_exceeded: its prompt and its token budget", () => {
    const chat = contextLengthExceeded(300, 256);
    expect(chat.message).toContain('Shorten the messages or max_tokens.');
    const responses = namingFieldsAs(RESPONSES_FIELDS, chat) as ApiError;
    expect(responses.param).toBe('input');
    expect(responses.message).toContain("; 'input' uses 300 tokens. Shorten 'input' or 'max_output_tokens'.");
    const completions = namingFieldsAs(COMPLETIONS_FIELDS, chat) as ApiError;
    expect(completions.param).toBe('prompt');
    expect(completions.message).toContain("Shorten 'prompt' or max_tokens.");
  });
});
