import { describe, expect, it } from 'vitest';
import * as errors from '../../../src/errors/index.ts';

describe('error model', () => {
  it('serializes to the OpenAI error body', () => {
    expect(errors.unauthorized().toBody()).toEqual({
      error: { message: 'Unauthorized', type: 'authentication_error', param: null, code: 'invalid_api_key' },
    });
  });

  it('keeps details and Retry-After for warming up', () => {
    const e = errors.modelWarmingUp({ state: 'pulling', progress: 12.5 });
    expect(e.status).toBe(503);
    expect(e.retryAfter).toBe(120);
    expect(e.toBody().error).toMatchObject({ code: 'model_warming_up', state: 'pulling', progress: 12.5 });
  });

  it('round-trips through plain data (thread boundary)', () => {
    const data = structuredClone(errors.queueFull(2).toData());
    const back = errors.toApiError(data);
    expect(back).toBeInstanceOf(errors.ApiError);
    expect(back.toData()).toEqual(errors.queueFull(2).toData());
  });

  it('maps unknown errors to a generic 500 and reports the details only to the log', () => {
    const seen: unknown[] = [];
    errors.setUnmappedErrorReporter((e) => seen.push(e));
    const e = errors.toApiError(new Error('secret internal detail'));
    expect(e.status).toBe(500);
    expect(JSON.stringify(e.toBody())).not.toContain('secret internal detail');
    expect(seen).toHaveLength(1);
  });
});
