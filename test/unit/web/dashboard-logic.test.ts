import { describe, expect, it } from 'vitest';
import { stoppedBecause } from '../../../web/src/batch-state.ts';
import { niceMax } from '../../../web/src/components/chart-scale.ts';
import { matchPath } from '../../../web/src/routes.ts';
import { pushSample } from '../../../web/src/stats.ts';

/** The dashboard's pure pieces: its path matching, the charts' axis maximum, the sample window, a batch's stop reason. */
describe('matchPath', () => {
  it.each([
    ['/', 'overview', {}],
    ['/sign-in', 'signIn', {}],
    ['/setup', 'setup', {}],
    ['/settings/keys', 'keys', {}],
    ['/settings/users', 'users', {}],
    ['/workspaces', 'workspaces', {}],
    ['/workspaces/ws_1', 'workspace', { workspaceId: 'ws_1' }],
    ['/workspaces/a%20b/', 'workspace', { workspaceId: 'a b' }],
    ['/playground', 'playground', {}],
  ])('%s -> %s', (p, page, params) => expect(matchPath(p)).toEqual({ page, params }));

  it.each(['/nope', '/workspaces/a/b', '/settings', '/api/v1/keys'])('%s is no page', (p) =>
    expect(matchPath(p)).toBeNull(),
  );
});

describe('niceMax', () => {
  it.each([
    [0, 1],
    [-3, 1],
    [Number.NaN, 1],
    [0.7, 1],
    [1, 1],
    [1.2, 2],
    [3, 5],
    [7, 10],
    [20, 20],
    [0.0031, 0.005],
    [1234, 2000],
  ])('%s -> %s', (v, want) => expect(niceMax(v)).toBeCloseTo(want, 10));
});

describe('pushSample', () => {
  it('keeps the newest samples up to the capacity, oldest first, without changing the input', () => {
    const w = [1, 2, 3];
    expect(pushSample(w, 4, 3)).toEqual([2, 3, 4]);
    expect(pushSample(w, 4, 5)).toEqual([1, 2, 3, 4]);
    expect(w).toEqual([1, 2, 3]);
  });
});

describe('stoppedBecause', () => {
  it('names a revoked or missing key, nothing for a batch without such an entry', () => {
    const entry = (code: string) => ({ code, message: 'm' });
    expect(stoppedBecause({ errors: { data: [entry('api_key_revoked')] } })).toBe('its key was revoked');
    expect(stoppedBecause({ errors: { data: [entry('invalid_json'), entry('api_key_not_found')] } })).toBe(
      'its key is gone',
    );
    expect(stoppedBecause({ errors: { data: [entry('invalid_json')] } })).toBeUndefined();
    expect(stoppedBecause({ errors: null })).toBeUndefined();
  });
});
