/**
 * End to end: the example app (examples/tool-server/server.ts), started as its own process the way it is
 * deployed (configuration from the environment, PORT=0 here), calling a Hearth shared endpoint.
 *
 * Which Hearth: `startHearth()` is the one switch. The real server (`hearth serve` on
 * ../shared/models/stories260K.gguf) when its CLI and the model are present, else a small fake in this file
 * that speaks the shared endpoint's wire format (OpenAI chat.completion.chunk events over SSE, `data: [DONE]`,
 * OpenAI error bodies, Retry-After). HEARTH_E2E=real insists on the real one, HEARTH_E2E=fake on the fake.
 * The failure scenarios (retries, refusals, broken streams, time-outs) always run against the fake, which can
 * misbehave on request; the real server cannot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const REAL_MODEL_FILE = path.resolve(ROOT, '../shared/models/stories260K.gguf');
const REAL_AVAILABLE = existsSync(path.join(ROOT, 'src/cli/hearth.ts')) && existsSync(REAL_MODEL_FILE);
const USE_REAL = process.env.HEARTH_E2E === 'real' || (process.env.HEARTH_E2E !== 'fake' && REAL_AVAILABLE);
const TOOL_KEY = 'example-tool-key-0123456789';

interface HearthUnderTest {
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Present for the fake only. */
  fake?: FakeHearth;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// The fake Hearth shared endpoint. The prompt picks the behaviour, so one fake serves every scenario.

interface SeenRequest {
  authorization: string | undefined;
  body: { model: string; messages: Array<{ role: string; content: string }>; stream: boolean; [k: string]: unknown };
}

interface FakeHearth {
  requests: SeenRequest[];
  /** Attempts seen per prompt. */
  attempts(prompt: string): number;
}

const FAKE_KEY = 'hk_fake_0123456789abcdefghij';
const FAKE_MODEL = 'local/fake-model';

function chunk(id: string, delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id,
    object: 'chat.completion.chunk',
    created: 1,
    model: FAKE_MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  code: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message, type: 'x', param: null, code } }));
}

async function startFakeHearth(): Promise<HearthUnderTest> {
  const requests: SeenRequest[] = [];
  const counts = new Map<string, number>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/api/inference/v1/chat/completions')
        return sendError(res, 404, 'no route', 'route_not_found');
      if (req.headers.authorization !== `Bearer ${FAKE_KEY}`)
        return sendError(res, 401, 'Unauthorized', 'invalid_api_key');
      const body = JSON.parse(raw) as SeenRequest['body'];
      requests.push({ authorization: req.headers.authorization, body });
      if (body.model !== FAKE_MODEL)
        return sendError(res, 404, `The model '${body.model}' does not exist`, 'model_not_found');
      const prompt = body.messages.at(-1)?.content ?? '';
      const attempt = (counts.get(prompt) ?? 0) + 1;
      counts.set(prompt, attempt);

      if (prompt === 'busy-once' && attempt === 1)
        return sendError(res, 503, 'queue full', 'queue_full', { 'retry-after': '0' });
      if (prompt === 'rate-limited-twice' && attempt <= 2)
        return sendError(res, 429, 'slow down', 'rate_limit_exceeded', { 'retry-after': '0' });
      if (prompt === 'warming-up')
        return sendError(res, 503, 'The model is warming up', 'model_warming_up', { 'retry-after': '120' });
      if (prompt === 'hang') return; // never answers: the client's time-out must end it

      const id = `chatcmpl-${attempt}`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (prompt === 'fail-mid-stream') {
        res.write(`data: ${JSON.stringify(chunk(id, { role: 'assistant', content: '' }))}\n\n`);
        res.write(`data: ${JSON.stringify(chunk(id, { content: 'Half' }))}\n\n`);
        res.end(
          `data: ${JSON.stringify({ error: { message: 'the engine crashed', type: 'server_error', param: null, code: 'internal_error' } })}\n\n`,
        );
        return;
      }
      if (prompt === 'truncated') {
        res.end(`data: ${JSON.stringify(chunk(id, { role: 'assistant', content: 'Once' }))}\n\n`);
        return;
      }
      // A normal stream, written awkwardly on purpose: a keep-alive comment, CRLF line ends, one event split
      // across two writes, then the usage chunk and [DONE].
      const words = ['Once', ' upon', ' a', ' time'];
      res.write(': keep-alive\r\n\r\n');
      res.write(`data: ${JSON.stringify(chunk(id, { role: 'assistant', content: '' }))}\r\n\r\n`);
      for (const w of words) {
        const event = `data: ${JSON.stringify(chunk(id, { content: w }))}\n\n`;
        res.write(event.slice(0, 9));
        res.write(event.slice(9));
      }
      res.write(`data: ${JSON.stringify(chunk(id, {}, 'stop'))}\n\n`);
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: FAKE_MODEL, choices: [], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: FAKE_KEY,
    model: FAKE_MODEL,
    fake: { requests, attempts: (prompt) => counts.get(prompt) ?? 0 },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The real Hearth (HEARTH_E2E=real): `hearth keys create` then `hearth serve`, per the lead's CLI interface.

function run(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function startRealHearth(): Promise<HearthUnderTest> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hearth-e2e-'));
  const keys = await run(['src/cli/hearth.ts', 'keys', 'create', '--name', 'e2e', '--data-dir', dataDir], ROOT);
  const apiKey = /hk_\S+/.exec(keys.stdout)?.[0];
  if (keys.code !== 0 || !apiKey) throw new Error(`hearth keys create failed: ${keys.stderr || keys.stdout}`);
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/hearth.ts',
      'serve',
      '--model',
      REAL_MODEL_FILE,
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('hearth serve did not become healthy');
    await new Promise((r) => setTimeout(r, 250));
  }
  const models = (await (
    await fetch(`${baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })
  ).json()) as { data: Array<{ id: string }> };
  return {
    baseUrl,
    apiKey,
    model: models.data[0]!.id,
    close: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The one switch between the fake and the real Hearth. */
function startHearth(): Promise<HearthUnderTest> {
  if (USE_REAL) {
    if (!REAL_AVAILABLE)
      throw new Error('HEARTH_E2E=real needs src/cli/hearth.ts and ../shared/models/stories260K.gguf');
    return startRealHearth();
  }
  return startFakeHearth();
}

// ---------------------------------------------------------------------------------------------------------
// The example app as a process.

interface RunningExample {
  baseUrl: string;
  child: ChildProcess;
  stderr: () => string;
}

function startExample(env: Record<string, string>): Promise<RunningExample> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/tool-server/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`example did not start: ${stderr}`)), 30_000);
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      for (const line of stderr.split('\n')) {
        if (!line.includes('tool server listening')) continue;
        clearTimeout(timer);
        const { port } = JSON.parse(line) as { port: number };
        resolve({ baseUrl: `http://127.0.0.1:${port}`, child, stderr: () => stderr });
        return;
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`example exited with ${code}: ${stderr}`));
    });
  });
}

async function stopExample(example: RunningExample | undefined): Promise<number | null> {
  if (!example || example.child.exitCode !== null) return example?.child.exitCode ?? null;
  const exited = new Promise<number | null>((r) => example.child.once('exit', (code) => r(code)));
  example.child.kill('SIGTERM');
  return exited;
}

interface Fixture {
  hearth: HearthUnderTest;
  example: RunningExample;
}

/** Starts a Hearth and the example app pointed at it, for one describe block. */
function useExampleAgainst(start: () => Promise<HearthUnderTest>, timeoutMs: number): Fixture {
  const fixture = {} as Fixture;
  beforeAll(async () => {
    fixture.hearth = await start();
    fixture.example = await startExample({
      TOOL_SERVER_API_KEY: TOOL_KEY,
      HEARTH_BASE_URL: fixture.hearth.baseUrl,
      HEARTH_API_KEY: fixture.hearth.apiKey,
      HEARTH_MODEL: fixture.hearth.model,
      HEARTH_TIMEOUT_MS: String(timeoutMs),
    });
  }, 120_000);
  afterAll(async () => {
    await stopExample(fixture.example);
    await fixture.hearth?.close();
  }, 30_000);
  return fixture;
}

async function callTool(example: RunningExample, tool: string, args: Record<string, unknown>, key = TOOL_KEY) {
  const res = await fetch(`${example.baseUrl}/api/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tool, args }),
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe(`example tool server against ${USE_REAL ? 'the real' : 'a fake'} Hearth`, () => {
  // Generous for stories260K on 2 shared CPU cores; the fake answers at once.
  const fx = useExampleAgainst(startHearth, 60_000);

  it('serves /health, the tool list and healthcheck', async () => {
    const health = await fetch(`${fx.example.baseUrl}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });

    const list = await fetch(`${fx.example.baseUrl}/api/v1/mcp/tools`, {
      headers: { authorization: `Bearer ${TOOL_KEY}` },
    });
    const { tools } = (await list.json()) as {
      tools: Array<{ name: string; input_schema: { type: string; required: string[] } }>;
    };
    expect(tools.map((t) => t.name)).toEqual(['healthcheck', 'complete']);
    expect(tools[1]!.input_schema.required).toEqual(['prompt']);

    expect((await callTool(fx.example, 'healthcheck', {})).body).toEqual({ ok: true });
  });

  it('401 with the wrong key, 400 without a prompt', async () => {
    const wrong = await callTool(fx.example, 'complete', { prompt: 'hi' }, 'nope');
    expect(wrong.status).toBe(401);
    expect(typeof wrong.body.error).toBe('string');
    const noPrompt = await callTool(fx.example, 'complete', {});
    expect(noPrompt.status).toBe(400);
    expect(noPrompt.body.path).toBe('/prompt');
  });

  it('streams a completion and answers the assembled text', async () => {
    const a = await callTool(fx.example, 'complete', { prompt: 'Tell me a story', system: 'Be brief', max_tokens: 16 });
    expect(a.status).toBe(200);
    expect(typeof a.body.content).toBe('string');
    expect(a.body.content.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(a.body.finish_reason);
    expect(a.body.model).toBe(fx.hearth.model);
    expect(a.body.usage.completion_tokens).toBeGreaterThan(0);
    if (fx.hearth.fake) {
      expect(a.body.content).toBe('Once upon a time');
      expect(a.body.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
      const seen = fx.hearth.fake.requests.find((r) => r.body.messages.at(-1)?.content === 'Tell me a story')!;
      expect(seen.authorization).toBe(`Bearer ${fx.hearth.apiKey}`);
      expect(seen.body).toMatchObject({
        model: fx.hearth.model,
        stream: true,
        max_tokens: 16,
        messages: [
          { role: 'system', content: 'Be brief' },
          { role: 'user', content: 'Tell me a story' },
        ],
      });
    } else {
      expect(a.body.usage.completion_tokens).toBeLessThanOrEqual(16);
    }
  });

  it('passes a request Hearth refuses on as a 400 naming the problem', async () => {
    const a = await callTool(fx.example, 'complete', { prompt: 'hi', model: 'nobody/no-such-model' });
    expect(a.status).toBe(400);
    expect(a.body.code).toBe('model_not_found');
  });
});

describe('example tool server: failure handling (fake Hearth)', () => {
  // A short Hearth time-out, for the 'hang' scenario.
  const fixture = useExampleAgainst(startFakeHearth, 1_500);
  const attempts = (prompt: string) => fixture.hearth.fake!.attempts(prompt);
  /** The tool's answer to `prompt` (a fake Hearth scenario), its status expected to be `status`. */
  const answered = async (prompt: string, status: number) => {
    const a = await callTool(fixture.example, 'complete', { prompt });
    expect(a.status).toBe(status);
    return a;
  };

  it('retries a 503 and a 429 honouring Retry-After, then succeeds', async () => {
    expect((await answered('busy-once', 200)).body.content).toBe('Once upon a time');
    expect(attempts('busy-once')).toBe(2);

    await answered('rate-limited-twice', 200);
    expect(attempts('rate-limited-twice')).toBe(3);
  });

  it('does not sit out a long Retry-After: 503 with the Retry-After passed on', async () => {
    const a = await answered('warming-up', 503);
    expect(a.headers.get('retry-after')).toBe('120');
    expect(a.body.code).toBe('model_warming_up');
    expect(attempts('warming-up')).toBe(1);
  });

  it('502 when the stream fails midway or ends without [DONE], with no retry of a started stream', async () => {
    expect((await answered('fail-mid-stream', 502)).body.error).toContain('the engine crashed');
    expect((await answered('truncated', 502)).body.error).toContain('[DONE]');
    expect(attempts('fail-mid-stream')).toBe(1);
  });

  it('504 when Hearth does not answer within the time-out', async () => {
    expect((await answered('hang', 504)).body.code).toBe('hearth_timeout');
  });
});

describe('example tool server: deployment', () => {
  it('refuses to start without its configuration, naming what is missing', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/tool-server/server.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: '0', HEARTH_BASE_URL: 'http://127.0.0.1:1', HEARTH_API_KEY: 'x' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(2);
    expect(stderr).toContain('TOOL_SERVER_API_KEY must be set');
  }, 30_000);

  it('shuts down cleanly on SIGTERM', async () => {
    const second = await startExample({
      TOOL_SERVER_API_KEY: TOOL_KEY,
      HEARTH_BASE_URL: 'http://127.0.0.1:9',
      HEARTH_API_KEY: 'unused',
    });
    expect((await fetch(`${second.baseUrl}/health`, { headers: { connection: 'close' } })).status).toBe(200);
    expect(await stopExample(second)).toBe(0);
  }, 30_000);
});
