import { describe, expect, it } from 'vitest';
import { Disposables } from '../../../src/lifecycle/disposables.ts';
import { createLogger } from '../../../src/log/logger.ts';

describe('Disposables', () => {
  it('closes in reverse order of registration, awaiting each, once', async () => {
    const order: string[] = [];
    const d = new Disposables();
    d.add('store', () => {
      order.push('store');
    });
    d.add('engine', async () => {
      await new Promise((r) => setTimeout(r, 5));
      order.push('engine');
    });
    d.add('http', () => {
      order.push('http');
    });
    const log = createLogger('error', () => {});
    const [a, b] = await Promise.all([d.disposeAll(log), d.disposeAll(log)]);
    expect(order).toEqual(['http', 'engine', 'store']);
    expect(a).toEqual({ failed: [] });
    expect(b).toBe(a);
  });

  it('a failing resource is logged and reported; the others still close', async () => {
    const lines: string[] = [];
    const order: string[] = [];
    const d = new Disposables();
    d.add('store', () => {
      order.push('store');
    });
    d.add('apps', () => Promise.reject(new Error('sandbox would not stop')));
    d.add('http', () => {
      throw new Error('boom');
    });
    const { failed } = await d.disposeAll(createLogger('error', (l) => lines.push(l)));
    expect(failed).toEqual(['http', 'apps']);
    expect(order).toEqual(['store']);
    expect(lines.join('')).toContain('sandbox would not stop');
  });

  it('refuses registrations once shutdown has begun', async () => {
    const d = new Disposables();
    await d.disposeAll(createLogger('error', () => {}));
    expect(() => d.add('late', () => {})).toThrow(/shutdown has begun/);
  });
});
