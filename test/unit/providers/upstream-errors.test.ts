import { describe, expect, it } from 'vitest';
import { isRetryableFailure, parseUpstreamErrorBody, scrubSecrets, upstreamFailureToApiError } from '../../../src/providers/upstream-errors.ts';

const KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';

describe('scrubSecrets', () => {
  it('removes the key, fragments of it, and key-shaped tokens', () => {
    expect(scrubSecrets(`Incorrect API key provided: ${KEY}.`, [KEY])).not.toContain('abcdefghijklmnop');
    expect(scrubSecrets('Incorrect API key provided: sk-proj-********************6789.', [KEY])).not.toMatch(/sk-proj/);
    expect(scrubSecrets('key ends with ...klmnopqrstuv', [KEY])).not.toContain('klmnopqrstuv');
    expect(scrubSecrets('bad key AIzaSyA1234567890abcdefghij', [])).not.toContain('AIza');
    expect(scrubSecrets('The model `gpt-4o-mini` does not exist', [KEY])).toBe('The model `gpt-4o-mini` does not exist');
  });
});

describe('parseUpstreamErrorBody', () => {
  it('reads OpenAI errors, passing on a specific code and param', () => {
    const info = parseUpstreamErrorBody(400, JSON.stringify({ error: { message: "This model's maximum context length is 8192 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } }), [KEY]);
    expect(info).toMatchObject({ message: "This model's maximum context length is 8192 tokens.", code: 'context_length_exceeded', param: 'messages', keyRejected: false });
  });

  it('reads Anthropic errors', () => {
    const info = parseUpstreamErrorBody(529, JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), [KEY]);
    expect(info.message).toBe('Overloaded');
    expect(isRetryableFailure(529, info)).toBe(true);
  });

  it("reads Gemini errors: API_KEY_INVALID counts as a rejected key, RetryInfo as a retry hint", () => {
    const bad = parseUpstreamErrorBody(400, JSON.stringify({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }] } }), [KEY]);
    expect(bad.keyRejected).toBe(true);
    const limited = parseUpstreamErrorBody(429, JSON.stringify([{ error: { code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' }] } }]), [KEY]);
    expect(limited.retryAfterMs).toBe(12000);
  });

  it("reads Mistral's 401 and 422 shapes", () => {
    expect(parseUpstreamErrorBody(401, '{"message":"Unauthorized","request_id":"abc"}', [KEY]).message).toBe('Unauthorized');
    const info = parseUpstreamErrorBody(422, JSON.stringify({ object: 'error', message: { detail: [{ type: 'extra_forbidden', loc: ['body', 'seed'], msg: 'Extra inputs are not permitted' }] }, type: 'invalid_request_message_error' }), [KEY]);
    expect(info.message).toBe('body.seed: Extra inputs are not permitted');
  });

  it('survives empty, non-JSON and huge bodies', () => {
    expect(parseUpstreamErrorBody(502, '', [KEY]).message).toBe('HTTP 502');
    expect(parseUpstreamErrorBody(502, '<html>Bad Gateway</html>', [KEY]).message).toBe('<html>Bad Gateway</html>');
    expect(parseUpstreamErrorBody(500, JSON.stringify({ error: { message: 'x'.repeat(5000) } }), [KEY]).message.length).toBeLessThan(600);
  });

  it('does not retry insufficient_quota or rejected keys', () => {
    const quota = parseUpstreamErrorBody(429, JSON.stringify({ error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } }), [KEY]);
    expect(isRetryableFailure(429, quota)).toBe(false);
    expect(upstreamFailureToApiError('openai', 429, quota).status).toBe(502);
    expect(isRetryableFailure(401, parseUpstreamErrorBody(401, '{}', [KEY]))).toBe(false);
  });
});

describe('upstreamFailureToApiError', () => {
  const info = (status: number, body: unknown = {}) => parseUpstreamErrorBody(status, JSON.stringify(body), [KEY]);

  it('maps per the documented policy', () => {
    expect(upstreamFailureToApiError('anthropic', 401, info(401))).toMatchObject({ status: 502, type: 'upstream_error', code: '401' });
    expect(upstreamFailureToApiError('gemini', 400, info(400, { error: { message: 'API key not valid', details: [{ reason: 'API_KEY_INVALID' }] } }))).toMatchObject({ status: 502, code: '400' });
    expect(upstreamFailureToApiError('openai', 400, info(400, { error: { message: 'bad', code: 'context_length_exceeded' } }))).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'context_length_exceeded' });
    expect(upstreamFailureToApiError('mistral', 422, info(422, { message: 'nope' }))).toMatchObject({ status: 400, code: 'upstream_invalid_request' });
    expect(upstreamFailureToApiError('openai', 404, info(404, { error: { message: 'no such model' } }))).toMatchObject({ status: 502, code: '404' });
    expect(upstreamFailureToApiError('openai', 503, info(503))).toMatchObject({ status: 502, code: '503' });
    const limited = upstreamFailureToApiError('openai', 429, info(429, { error: { message: 'slow down' } }), 1200);
    expect(limited).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'upstream_rate_limited', retryAfter: 2 });
    expect(limited.message).toContain('openai');
    expect(limited.message).toContain('slow down');
  });
});
