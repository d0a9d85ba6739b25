import { describe, expect, it } from 'vitest';
import { SecretScrubber, scrubSecrets } from '../../../src/providers/secret-scrubber.ts';
import {
  isRetryableFailure,
  parseUpstreamErrorBody,
  upstreamFailureToApiError,
} from '../../../src/providers/upstream-errors.ts';

const KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
const SCRUBBER = new SecretScrubber([KEY]);

describe('scrubSecrets', () => {
  it('removes the key, fragments of it, and key-shaped tokens', () => {
    expect(scrubSecrets(`Incorrect API key provided: ${KEY}.`, [KEY])).not.toContain('abcdefghijklmnop');
    expect(scrubSecrets('Incorrect API key provided: sk-proj-********************6789.', [KEY])).not.toMatch(/sk-proj/);
    expect(scrubSecrets('key ends with ...klmnopqrstuv', [KEY])).not.toContain('klmnopqrstuv');
    expect(scrubSecrets('bad key AIzaSyA1234567890abcdefghij', [])).not.toContain('AIza');
    expect(scrubSecrets('The model `gpt-4o-mini` does not exist', [KEY])).toBe(
      'The model `gpt-4o-mini` does not exist',
    );
  });

  it('removes the key in base64 at any alignment, and withholds text that spells it out', () => {
    for (const prefix of ['', 'u:', 'us:', 'user:']) {
      const b64 = Buffer.from(prefix + KEY).toString('base64');
      for (const token of [b64, b64.replace(/\+/g, '-').replace(/\//g, '_')]) {
        const scrubbed = scrubSecrets(`Authorization: Basic ${token} refused`, [KEY]);
        expect(scrubbed, prefix).toBe('Authorization: Basic [redacted] refused');
      }
    }
    expect(scrubSecrets(`bad key ${[...KEY].join(' ')}`, [KEY])).not.toContain('a b c d');
    expect(scrubSecrets('Rate limit reached for gpt-4o in organization org-123', [KEY])).toBe(
      'Rate limit reached for gpt-4o in organization org-123',
    );
  });
});

describe('SecretScrubber', () => {
  it('scrubs an ApiError: message, param and details, keeping status, type and code', async () => {
    const { upstreamError } = await import('../../../src/errors/errors.ts');
    const { ApiError } = await import('../../../src/errors/api-error.ts');
    const err = SCRUBBER.scrubError(upstreamError('mistral', 401, `Unauthorized key ${KEY}`)) as InstanceType<
      typeof ApiError
    >;
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 502, type: 'upstream_error', code: '401' });
    expect(err.message).toContain('Unauthorized key [redacted]');
    expect(err.message).not.toContain('abcdefghijklmnop');
    const withDetails = new ApiError({
      status: 502,
      type: 'upstream_error',
      message: 'x',
      code: null,
      param: KEY,
      details: { echo: `key=${KEY}` },
    });
    expect(JSON.stringify((SCRUBBER.scrubError(withDetails) as InstanceType<typeof ApiError>).toBody())).not.toContain(
      'abcdefghijklmnop',
    );
    const other = new Error(KEY);
    expect(SCRUBBER.scrubError(other)).toBe(other);
  });
});

describe('parseUpstreamErrorBody', () => {
  it('reads OpenAI errors, passing on a specific code and param', () => {
    const info = parseUpstreamErrorBody(
      400,
      JSON.stringify({
        error: {
          message: "This model's maximum context length is 8192 tokens.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      }),
      SCRUBBER,
    );
    expect(info).toMatchObject({
      message: "This model's maximum context length is 8192 tokens.",
      code: 'context_length_exceeded',
      param: 'messages',
      keyRejected: false,
    });
  });

  it('reads Anthropic errors', () => {
    const info = parseUpstreamErrorBody(
      529,
      JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      SCRUBBER,
    );
    expect(info.message).toBe('Overloaded');
    expect(isRetryableFailure(529, info)).toBe(true);
  });

  it('reads Gemini errors: API_KEY_INVALID counts as a rejected key, RetryInfo as a retry hint', () => {
    const bad = parseUpstreamErrorBody(
      400,
      JSON.stringify({
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }],
        },
      }),
      SCRUBBER,
    );
    expect(bad.keyRejected).toBe(true);
    const limited = parseUpstreamErrorBody(
      429,
      JSON.stringify([
        {
          error: {
            code: 429,
            message: 'quota',
            status: 'RESOURCE_EXHAUSTED',
            details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' }],
          },
        },
      ]),
      SCRUBBER,
    );
    expect(limited.retryAfterMs).toBe(12000);
  });

  it("reads Mistral's 401 and 422 shapes", () => {
    expect(parseUpstreamErrorBody(401, '{"message":"Unauthorized","request_id":"abc"}', SCRUBBER).message).toBe(
      'Unauthorized',
    );
    const info = parseUpstreamErrorBody(
      422,
      JSON.stringify({
        object: 'error',
        message: {
          detail: [{ type: 'extra_forbidden', loc: ['body', 'seed'], msg: 'Extra inputs are not permitted' }],
        },
        type: 'invalid_request_message_error',
      }),
      SCRUBBER,
    );
    expect(info.message).toBe('body.seed: Extra inputs are not permitted');
  });

  it('survives empty, non-JSON and huge bodies', () => {
    expect(parseUpstreamErrorBody(502, '', SCRUBBER).message).toBe('HTTP 502');
    expect(parseUpstreamErrorBody(502, '<html>Bad Gateway</html>', SCRUBBER).message).toBe('<html>Bad Gateway</html>');
    expect(
      parseUpstreamErrorBody(500, JSON.stringify({ error: { message: 'x'.repeat(5000) } }), SCRUBBER).message.length,
    ).toBeLessThan(600);
  });

  it('does not retry insufficient_quota or rejected keys', () => {
    const quota = parseUpstreamErrorBody(
      429,
      JSON.stringify({
        error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
      }),
      SCRUBBER,
    );
    expect(isRetryableFailure(429, quota)).toBe(false);
    expect(upstreamFailureToApiError('openai', 429, quota).status).toBe(502);
    expect(isRetryableFailure(401, parseUpstreamErrorBody(401, '{}', SCRUBBER))).toBe(false);
  });
});

describe('upstreamFailureToApiError', () => {
  const info = (status: number, body: unknown = {}) => parseUpstreamErrorBody(status, JSON.stringify(body), SCRUBBER);

  it('maps per the documented policy', () => {
    expect(upstreamFailureToApiError('anthropic', 401, info(401))).toMatchObject({
      status: 502,
      type: 'upstream_error',
      code: '401',
    });
    expect(
      upstreamFailureToApiError(
        'gemini',
        400,
        info(400, { error: { message: 'API key not valid', details: [{ reason: 'API_KEY_INVALID' }] } }),
      ),
    ).toMatchObject({ status: 502, code: '400' });
    expect(
      upstreamFailureToApiError(
        'openai',
        400,
        info(400, { error: { message: 'bad', code: 'context_length_exceeded' } }),
      ),
    ).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'context_length_exceeded' });
    expect(upstreamFailureToApiError('mistral', 422, info(422, { message: 'nope' }))).toMatchObject({
      status: 400,
      code: 'upstream_invalid_request',
    });
    expect(upstreamFailureToApiError('openai', 404, info(404, { error: { message: 'no such model' } }))).toMatchObject({
      status: 502,
      code: '404',
    });
    expect(upstreamFailureToApiError('openai', 503, info(503))).toMatchObject({ status: 502, code: '503' });
    const limited = upstreamFailureToApiError('openai', 429, info(429, { error: { message: 'slow down' } }), 1200);
    expect(limited).toMatchObject({
      status: 429,
      type: 'rate_limit_error',
      code: 'upstream_rate_limited',
      retryAfter: 2,
    });
    expect(limited.message).toContain('openai');
    expect(limited.message).toContain('slow down');
  });
});
