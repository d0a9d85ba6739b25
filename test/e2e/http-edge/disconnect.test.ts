import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess } from '../../helpers/hearth-process.ts';
import { postChat } from '../../helpers/chat-request.ts';
import { serveNeverStopping } from '../../helpers/served-model.ts';
import { postJson } from '../../helpers/held-stream.ts';

/**
 * A client that disconnects mid-stream cancels its generation and frees its slot at once: with one slot,
 * the next request can only be answered if the first generation was cancelled (it would otherwise run
 * for thousands of tokens), and the metrics show a cancelled finish and far fewer tokens than asked.
 */
let hearth: HearthProcess;
const MODEL = 'local/never-stops';

/** A stream runs until cancelled: 65,536 tokens of context take this model over 15 s to fill (2,048 took 1-2 s). */
const LONG_CONTEXT = 65_536;
const ASKED = 60_000;

beforeAll(async () => {
  hearth = await serveNeverStopping(
    MODEL,
    { slots: 1, 'max-tokens': 100000, 'context-size': LONG_CONTEXT },
    {},
    LONG_CONTEXT,
  );
});

afterAll(async () => {
  await hearth?.stop();
});

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Opens a streaming request, waits for `events` SSE data events, then destroys the socket. */
function streamThenDisconnect(events: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = postJson(`${hearth.baseUrl}/api/inference/v1/chat/completions`, hearth.key, {
      model: MODEL,
      messages: [{ role: 'user', content: 'go' }],
      stream: true,
      max_tokens: ASKED,
    });
    let seen = 0;
    req.on('response', (res) => {
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      res.on('data', (d: Buffer) => {
        seen += (d.toString().match(/^data: /gm) ?? []).length;
        if (seen >= events) {
          req.destroy();
          resolve(seen);
        }
      });
    });
    req.on('error', (e) => (seen >= events ? undefined : reject(e)));
  });
}

describe('client disconnect', () => {
  it('cancels generation and frees the only slot for the next request', async () => {
    const seen = await streamThenDisconnect(5);
    expect(seen).toBeGreaterThanOrEqual(5);

    // The next request needs the single slot.
    const r = await postChat(hearth, { model: MODEL, messages: [{ role: 'user', content: 'again' }], max_tokens: 4 });
    expect(r.status).toBe(200);
    const json = (await r.json()) as {
      usage: { completion_tokens: number };
      choices: Array<{ finish_reason: string }>;
    };
    expect(json.usage.completion_tokens).toBe(4);
    expect(json.choices[0]!.finish_reason).toBe('length');

    expect(await metric('hearth_request_success_total', 'finished_reason="cancelled"')).toBe(1);
    expect(await metric('hearth_generation_tokens_total')).toBeLessThan(ASKED);
    expect(await metric('hearth_num_requests_running')).toBe(0);
    expect(await metric('hearth_num_requests_waiting')).toBe(0);
  });

  it('repeated disconnects never leak the slot', async () => {
    for (let i = 0; i < 5; i++) await streamThenDisconnect(2);
    const r = await postChat(hearth, { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
    expect(r.status).toBe(200);
    expect(await metric('hearth_request_success_total', 'finished_reason="cancelled"')).toBe(6);
  });
});
