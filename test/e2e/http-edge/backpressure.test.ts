import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, modelArgs } from '../../helpers/hearth-process.ts';
import { parseResponses } from '../../helpers/raw-http.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * SSE backpressure: a client that stops reading is buffered up to --stream-buffer-limit, then dropped and its
 * generation cancelled; a client that reads slowly gets every event, complete and in order.
 */
let hearth: HearthProcess;
const MODEL = 'local/instant';

beforeAll(async () => {
  hearth = await startHearthProcess({
    args: modelArgs(await tinyModel(), MODEL, {
      engine: 'instant',
      'max-tokens': 1000000,
      'context-size': 1048576,
      'stream-buffer-limit': 65536,
    }),
  });
  await hearth.waitReady();
});
afterAll(async () => {
  await hearth?.stop();
});

/** A streamed chat completion on a raw socket (`Connection: close`: the answer ends with the connection). */
function rawStream(maxTokens: number): net.Socket {
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'x' }],
    stream: true,
    max_tokens: maxTokens,
  });
  const socket = net.connect(hearth.port, '127.0.0.1');
  socket.write(
    `POST /api/inference/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${hearth.key}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return socket;
}

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('SSE backpressure', () => {
  it('drops a client that stops reading once its buffer is full, and cancels its generation', async () => {
    const socket = rawStream(1_000_000);
    socket.pause(); // never read: the kernel buffers fill, then uWS reports backpressure
    // The server drops the connection (overflow) and cancels, long before a million tokens.
    for (let i = 0; i < 400 && (await metric('hearth_request_success_total', 'finished_reason="cancelled"')) < 1; i++)
      await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    expect(await metric('hearth_request_success_total', 'finished_reason="cancelled"')).toBe(1);
    expect(await metric('hearth_generation_tokens_total')).toBeLessThan(1_000_000);
    expect((await fetch(`${hearth.baseUrl}/health`)).status).toBe(200);
  });

  it('delivers every event in order to a reader that pauses now and then', async () => {
    const tokens = 20_000;
    const socket = rawStream(tokens);
    let raw = '';
    let reads = 0;
    socket.on('data', (d: Buffer) => {
      raw += d.toString('latin1');
      if (++reads % 50 === 0) {
        socket.pause();
        setTimeout(() => socket.resume(), 1);
      }
    });
    await new Promise<void>((resolve) => socket.on('end', () => resolve()));
    socket.destroy();
    const [answer] = parseResponses(raw); // chunked framing decoded (byte-exact on latin1 text)
    expect(answer?.status).toBe(200);
    const body = Buffer.from(answer!.body, 'latin1').toString('utf8');
    const events = body.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events
      .slice(0, -1)
      .map(
        (e) =>
          JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> },
      );
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').filter((t) => t.length > 0);
    expect(content).toHaveLength(tokens);
    const words = [' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', '.'];
    content.forEach((t, i) => expect(t).toBe(words[i % words.length]));
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
  });
});
