import { describe, expect, it } from 'vitest';
import { StopDetector } from '../../../src/worker/stop-detector.ts';

const feed = (stops: string[], pieces: string[]) => {
  const d = new StopDetector(stops);
  let out = '';
  for (const p of pieces) {
    out += d.push(p);
    if (d.stopped) break;
  }
  return { out: out + d.flush(), stopped: d.stopped };
};

describe('StopDetector', () => {
  it('passes text through without stops', () => {
    expect(feed([], ['a', 'b'])).toEqual({ out: 'ab', stopped: false });
  });
  it('stops before a stop string split across pieces', () => {
    expect(feed(['END'], ['hello E', 'N', 'D more'])).toEqual({ out: 'hello ', stopped: true });
  });
  it('releases held text that did not become a stop', () => {
    expect(feed(['END'], ['hello E', 'Nx'])).toEqual({ out: 'hello ENx', stopped: false });
    expect(feed(['END'], ['tail E'])).toEqual({ out: 'tail E', stopped: false });
  });
  it('picks the earliest of several stops, and names it', () => {
    expect(feed(['cd', 'b'], ['abcd'])).toEqual({ out: 'a', stopped: true });
    const d = new StopDetector(['cd', 'b']);
    d.push('xab');
    expect(d.matched).toBe('b');
    const none = new StopDetector(['cd']);
    none.push('abc');
    expect(none.matched).toBeUndefined();
  });
  it('withholds only a possible prefix', () => {
    const d = new StopDetector(['###']);
    expect(d.push('ab#')).toBe('ab');
    expect(d.push('#')).toBe('');
    expect(d.push('x')).toBe('##x');
  });
});
