import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log/logger.ts';
import { invokeTool } from '../../../src/tools/tool-invoker.ts';
import { ToolRegistry } from '../../../src/tools/tool-registry.ts';
import type { ToolDefinition } from '../../../src/tools/tool-definition.ts';

const log = createLogger('error', () => {});
const def = (name: string, handler: ToolDefinition['handler']): ToolDefinition => ({
  name,
  description: 'd',
  input_schema: { type: 'object', properties: {} },
  handler,
});
const registry = new ToolRegistry([
  def('sync-throw', () => {
    throw new Error('sync');
  }),
  def('undefined', async () => undefined as never),
  def('forever', () => new Promise(() => {})),
]);
const run = (tool: string, signal = new AbortController().signal, timeoutMs = 1000) =>
  invokeTool(registry, { tool, args: {}, transport: 'http', signal, timeoutMs }, log);

describe('invokeTool', () => {
  it('maps a synchronous throw to a generic failure', async () => {
    const o = await run('sync-throw');
    expect(o.ok).toBe(false);
    if (!o.ok)
      expect([o.failure, o.error.status, o.error.message]).toEqual(['failed', 500, "Tool 'sync-throw' failed"]);
  });

  it('answers null for a handler that resolves to undefined', async () => {
    expect(await run('undefined')).toEqual({ ok: true, result: null, json: 'null' });
  });

  it("stops waiting when the caller's signal fires", async () => {
    const c = new AbortController();
    const pending = run('forever', c.signal, 60_000);
    c.abort(new Error('client gone'));
    const o = await pending;
    expect(o.ok === false && o.failure).toBe('aborted');
  });

  it('times out a handler that never settles', async () => {
    const o = await run('forever', new AbortController().signal, 20);
    expect(o.ok === false && [o.failure, o.error.status]).toEqual(['timeout', 504]);
  });
});
