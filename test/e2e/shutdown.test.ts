import { describe, expect, it } from 'vitest';
import { startHearthProcess } from '../helpers/hearth-process.ts';
import { tinyModel } from '../helpers/test-model.ts';

/** SIGTERM is graceful: a stream in flight finishes with [DONE], then the process exits 0. */
describe('graceful shutdown', () => {
  it('lets a running stream finish before the workers stop', async () => {
    const hearth = await startHearthProcess({ args: ['--model', await tinyModel(), '--model-id', 'local/instant', '--engine', 'instant', '--context-size', '1048576', '--max-tokens', '1000000', '--shutdown-grace-ms', '30000'] });
    try {
      await hearth.waitReady();
      const res = await fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'local/instant', messages: [{ role: 'user', content: 'x' }], stream: true, max_tokens: 50_000, stream_options: { include_usage: true } }),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const first = await reader.read(); // the stream is running
      expect(first.done).toBe(false);
      const exited = hearth.stop('SIGTERM');
      let text = new TextDecoder().decode(first.value);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
      expect(text).toContain('"completion_tokens":50000');
      expect(await exited).toBe(0);
      expect(hearth.logs()).toMatch(/"msg":"stopped"/);
    } finally {
      await hearth.stop();
    }
  });
});
