import { describe, expect, it } from 'vitest';
import { engineFailure, setUnmappedErrorReporter, toApiError } from '../../../src/errors/index.ts';

/** Worker and engine failures cross the thread boundary as codes; the main thread's one mapper decides what a client sees. */
describe('engine failures', () => {
  it('an engine failure is the generic documented 500 internal_error; its message reaches only the log', () => {
    const logged: unknown[] = [];
    setUnmappedErrorReporter((e) => logged.push(e));
    const raw = 'llama_decode failed: -3 at /home/build/models/secret-model.gguf (ggml_abort)';
    const crossed = structuredClone(engineFailure.internal('engine_error', new Error(raw))); // as posted on the task's port
    const e = toApiError(crossed);
    expect(e.toBody()).toEqual({
      error: { message: 'Internal server error', type: 'server_error', param: null, code: 'internal_error' },
    });
    expect(e.status).toBe(500);
    expect(JSON.stringify(e.toBody())).not.toContain('secret-model');
    expect(logged).toHaveLength(1);
    expect(String(logged[0])).toContain(raw);
    expect(String(logged[0])).toContain('engine_error');
  });

  it('an over-long prompt is the client error 400 context_length_exceeded, and nothing is logged', () => {
    const logged: unknown[] = [];
    setUnmappedErrorReporter((e) => logged.push(e));
    const e = toApiError(structuredClone(engineFailure.contextLengthExceeded(5000, 2048)));
    expect(e.status).toBe(400);
    expect(e.code).toBe('context_length_exceeded');
    expect(e.param).toBe('messages');
    expect(e.message).toContain('2048');
    expect(logged).toHaveLength(0);
  });

  it("a refused grammar is the request's 400 invalid_grammar, without the engine's message", () => {
    const e = toApiError(
      structuredClone(
        engineFailure.internal('invalid_grammar', 'parse: expecting name at 3:7 in /opt/hearth/grammar.cpp'),
      ),
    );
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_grammar');
    expect(e.message).not.toContain('grammar.cpp');
  });

  it('a failure with an unknown code is still the generic 500 (never its detail)', () => {
    setUnmappedErrorReporter(() => {});
    const e = toApiError({
      kind: 'engine-failure',
      code: 'callback_failed',
      detail: 'job callback failed: TypeError: x is undefined',
    });
    expect(e.code).toBe('internal_error');
    expect(e.message).not.toContain('TypeError');
  });
});
