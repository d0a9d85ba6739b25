/**
 * Contract of the tool-server kit (service-spec 4.5; contract.md "Tool-server pattern"), over real HTTP:
 * every route, status and body shape of the `{tool, args}` protocol, and the MCP Streamable HTTP face on the
 * same path driven by the official MCP SDK client.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createLogger } from '../../src/log/logger.ts';
import {
  createToolServer,
  defineTool,
  ToolDefinitionError,
  ToolError,
  type JsonValue,
  type ToolDefinition,
  type ToolServer,
} from '../../src/tools/index.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { rejectionBy } from '../helpers/unit-rejection.ts';

const KEY = 'tool-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${KEY}` };
const TIMEOUT_MS = 400;
const JSON_TYPE = { 'content-type': 'application/json' };

const weather = defineTool<{ city: string; units: string }>({
  name: 'weather',
  description: 'Current weather for a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 1 },
      units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
    },
    required: ['city'],
    additionalProperties: false,
  },
  handler: async ({ city, units }) => ({ city, units, temperature: 21 }),
});

const handlerCalls: string[] = [];
let slowSawAbort = false;
const tools: ToolDefinition<any>[] = [
  weather,
  defineTool({
    name: 'boom',
    description: 'Always throws a plain Error',
    input_schema: { type: 'object', properties: {} },
    handler: async () => {
      handlerCalls.push('boom');
      throw new Error('secret-detail-db-password');
    },
  }),
  defineTool({
    name: 'throws_value',
    description: 'Throws something that is not an Error',
    input_schema: { type: 'object', properties: { kind: { type: 'string' } }, required: ['kind'] },
    handler: async ({ kind }: { kind: string }) => {
      const thrown: Record<string, unknown> = {
        string: 'a plain string',
        null: null,
        undefined,
        number: 42,
        bare: Object.create(null),
        hostile: {
          toString() {
            throw new Error('no');
          },
        },
        symbol: Symbol('s'),
      };
      throw thrown[kind];
    },
  }),
  defineTool({
    name: 'teapot',
    description: 'Throws a ToolError',
    input_schema: { type: 'object', properties: {} },
    handler: async () => {
      throw new ToolError(502, 'the kettle service is down', { code: 'kettle_down', retryAfter: 7 });
    },
  }),
  defineTool({
    name: 'slow',
    description: 'Waits for its abort signal',
    input_schema: { type: 'object', properties: {} },
    handler: (_args, ctx) =>
      new Promise((resolve) => {
        const fallback = setTimeout(() => resolve({ finished: true }), 20_000);
        ctx.signal.addEventListener('abort', () => {
          slowSawAbort = true;
          clearTimeout(fallback);
          resolve({ finished: false });
        });
      }),
  }),
  defineTool({
    name: 'bigint',
    description: 'Returns something JSON cannot hold',
    input_schema: { type: 'object', properties: {} },
    handler: async () => ({ n: 1n }) as never,
  }),
  defineTool({
    name: 'echo',
    description: 'Echoes args',
    input_schema: { type: 'object', properties: { value: {} } },
    handler: async (args, ctx) => {
      handlerCalls.push(`echo:${ctx.transport}`);
      return { args, transport: ctx.transport } as never;
    },
  }),
];

const logLines: string[] = [];
let server: ToolServer;
let base: string;

beforeAll(async () => {
  server = createToolServer({
    tools,
    apiKey: KEY,
    port: 0,
    host: '127.0.0.1',
    bodyLimitBytes: 4096,
    toolTimeoutMs: TIMEOUT_MS,
    logger: createLogger('debug', (line) => void logLines.push(line)),
  });
  const { port } = await server.listen();
  expect(server.port).toBe(port);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.close();
});

interface JsonAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** Every answer of the kit must be JSON: this helper fails the test otherwise. */
async function call(path: string, init: RequestInit = {}): Promise<JsonAnswer> {
  const res = await fetch(`${base}${path}`, init);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) };
}

const post = (body: unknown, headers: Record<string, string> = AUTH) =>
  call('/api/v1/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A raw request through node:http, for bodies fetch cannot send (chunked without a length). */
function rawPost(
  path: string,
  chunks: string[],
  headers: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

function rawGet(port: number, path: string, agent: Agent): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function expectError(answer: JsonAnswer, status: number, code?: string): void {
  expect(answer.status).toBe(status);
  expect(typeof answer.body.error).toBe('string');
  expect(answer.body.error.length).toBeGreaterThan(0);
  if (code) expect(answer.body.code).toBe(code);
}

describe('GET /health', () => {
  it('answers {"ok": true} without a bearer (public)', async () => {
    const a = await call('/health');
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ ok: true });
  });

  it('ignores a wrong bearer', async () => {
    const a = await call('/health', { headers: { authorization: 'Bearer nope' } });
    expect(a.status).toBe(200);
  });
});

describe('GET /api/v1/mcp/tools', () => {
  it('lists every tool with name, description and input_schema, healthcheck included', async () => {
    const a = await call('/api/v1/mcp/tools', { headers: AUTH });
    expect(a.status).toBe(200);
    const names = a.body.tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(['healthcheck', 'weather', 'boom', 'throws_value', 'teapot', 'slow', 'bigint', 'echo']);
    const w = a.body.tools.find((t: { name: string }) => t.name === 'weather');
    expect(w).toEqual({
      name: 'weather',
      description: 'Current weather for a city',
      input_schema: weather.input_schema,
    });
    for (const t of a.body.tools) {
      expect(typeof t.description).toBe('string');
      expect(t.input_schema.type).toBe('object');
      expect(typeof t.input_schema.properties).toBe('object');
    }
  });

  it('needs the bearer', async () => {
    expectError(await call('/api/v1/mcp/tools'), 401);
    const wrong = await call('/api/v1/mcp/tools', { headers: { authorization: 'Bearer wrong' } });
    expectError(wrong, 401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
  });
});

describe('POST /api/v1/mcp {tool, args}', () => {
  it('runs the built-in healthcheck', async () => {
    const a = await post({ tool: 'healthcheck', args: {} });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ ok: true });
  });

  it("answers the tool's JSON result, with schema defaults filled in", async () => {
    const a = await post({ tool: 'weather', args: { city: 'Oslo' } });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ city: 'Oslo', units: 'metric', temperature: 21 });
  });

  it('treats missing args as {}', async () => {
    const a = await post({ tool: 'healthcheck' });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ ok: true });
  });

  it('accepts the bearer scheme in any case', async () => {
    const a = await post({ tool: 'healthcheck', args: {} }, { authorization: `bearer ${KEY}` });
    expect(a.status).toBe(200);
  });

  it('400 names the failing path when args fail the schema, and the handler does not run', async () => {
    const a = await post({ tool: 'weather', args: { city: 42 } });
    expectError(a, 400, 'invalid_arguments');
    expect(a.body.error).toBe('args/city must be string');
    expect(a.body.path).toBe('/city');
  });

  it('400 for a missing required property points at it', async () => {
    const a = await post({ tool: 'weather', args: {} });
    expectError(a, 400, 'invalid_arguments');
    expect(a.body.path).toBe('/city');
    expect(a.body.error).toContain("'city'");
  });

  it('400 for an extra property when the schema forbids it', async () => {
    const a = await post({ tool: 'weather', args: { city: 'Oslo', wind: true } });
    expectError(a, 400, 'invalid_arguments');
    expect(a.body.path).toBe('/wind');
  });

  it('404 for an unknown tool', async () => {
    const a = await post({ tool: 'nope', args: {} });
    expectError(a, 404, 'tool_not_found');
    expect(a.body.error).toContain('nope');
  });

  it('401 for a wrong, missing or non-bearer authorization, before running anything', async () => {
    const before = handlerCalls.length;
    expectError(await post({ tool: 'echo', args: {} }, { authorization: 'Bearer wrong-key' }), 401);
    expectError(await post({ tool: 'echo', args: {} }, {}), 401);
    expectError(await post({ tool: 'echo', args: {} }, { authorization: `Basic ${KEY}` }), 401);
    expectError(await post({ tool: 'echo', args: {} }, { authorization: `Bearer ${KEY}x` }), 401);
    expect(handlerCalls.length).toBe(before);
  });

  it('400 for malformed JSON and for an empty body', async () => {
    expectError(await post('{"tool": "healthcheck",'), 400, 'invalid_json');
    expectError(await post(''), 400, 'invalid_json');
  });

  it('400 for a missing or non-string tool', async () => {
    expectError(await post({ args: {} }), 400, 'invalid_tool_call');
    expectError(await post({ tool: 7, args: {} }), 400, 'invalid_tool_call');
    expectError(await post('"healthcheck"'), 400, 'invalid_tool_call');
  });

  it('400 for args that are not an object', async () => {
    for (const args of [[1, 2], 'x', 3, null]) {
      const a = await post({ tool: 'echo', args });
      expectError(a, 400, 'invalid_tool_call');
      expect(a.body.param).toBe('args');
    }
  });

  it('415 for a body that is declared as something other than JSON', async () => {
    const a = await call('/api/v1/mcp', {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'text/plain' },
      body: '{}',
    });
    expectError(a, 415);
  });

  it('413 for a body over the limit (declared length)', async () => {
    const a = await post({ tool: 'echo', args: { value: 'x'.repeat(10_000) } });
    expectError(a, 413, 'payload_too_large');
  });

  it('413 for a chunked body that grows over the limit', async () => {
    const a = await rawPost(
      '/api/v1/mcp',
      ['{"tool":"echo","args":{"value":"', 'x'.repeat(3000), 'x'.repeat(3000), '"}}'],
      {
        ...AUTH,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
      },
    );
    expect(a.status).toBe(413);
    expect(typeof a.body.error).toBe('string');
  });

  it('reads a chunked body under the limit', async () => {
    const a = await rawPost('/api/v1/mcp', ['{"tool":"echo",', '"args":{"value":"abc"}}'], {
      ...AUTH,
      'content-type': 'application/json',
      'transfer-encoding': 'chunked',
    });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ args: { value: 'abc' }, transport: 'http' });
  });

  it('500 without the message or stack when the handler throws, and logs the details', async () => {
    const a = await post({ tool: 'boom', args: {} });
    expectError(a, 500, 'tool_failed');
    const text = JSON.stringify(a.body);
    expect(text).not.toContain('secret-detail');
    expect(text).not.toMatch(/\bat .*\.ts/);
    const logged = logLines.find((l) => l.includes('tool handler threw'));
    expect(logged).toBeDefined();
    expect(logged).toContain('secret-detail-db-password');
    expect(JSON.parse(logged!).err.stack).toContain('Error');
  });

  it('400 json_too_deep for a body nested deeper than 64 levels, before the tool runs (the shared edge parser)', async () => {
    const deep = `{"tool":"echo","args":{"value":${'['.repeat(100)}${']'.repeat(100)}}}`;
    expectError(await post(deep), 400, 'json_too_deep');
  });

  it('HEAD /health answers the headers of GET without a body; the next answer on the connection is intact', async () => {
    const r = await rawExchange(
      server.port,
      'HEAD /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n',
      { expectResponses: 2, headRequests: 1 },
    );
    expect(r.responses.map((x) => x.status)).toEqual([200, 200]);
    expect(r.responses[0]!.body).toBe('');
    expect(r.responses[0]!.headers.get('content-length')).toBe(String('{"ok":true}'.length));
    expect(JSON.parse(r.responses[1]!.body)).toEqual({ ok: true });
  });

  it('500 tool_failed when the handler throws something that is not an Error', async () => {
    for (const kind of ['string', 'null', 'undefined', 'number', 'bare', 'hostile', 'symbol']) {
      expectError(await post({ tool: 'throws_value', args: { kind } }), 500, 'tool_failed');
    }
  });

  it('a ToolError keeps its status, message, code and Retry-After', async () => {
    const a = await post({ tool: 'teapot', args: {} });
    expectError(a, 502, 'kettle_down');
    expect(a.body.error).toBe('the kettle service is down');
    expect(a.headers.get('retry-after')).toBe('7');
  });

  it('504 when the handler outlives toolTimeoutMs, and its signal is aborted', async () => {
    slowSawAbort = false;
    const a = await post({ tool: 'slow', args: {} });
    expectError(a, 504, 'tool_timeout');
    expect(slowSawAbort).toBe(true);
  });

  it('500 when the handler returns something that is not JSON', async () => {
    expectError(await post({ tool: 'bigint', args: {} }), 500, 'tool_result_not_json');
  });
});

describe('routes and methods', () => {
  it('405 with Allow for a wrong method on a known path', async () => {
    const get = await call('/api/v1/mcp', { headers: { ...AUTH, accept: 'text/event-stream' } });
    expectError(get, 405, 'method_not_allowed');
    expect(get.headers.get('allow')).toBe('POST');
    expectError(await call('/api/v1/mcp', { method: 'DELETE', headers: AUTH }), 405);
    const postHealth = await call('/health', { method: 'POST', body: '{}' });
    expectError(postHealth, 405);
    expect(postHealth.headers.get('allow')).toBe('GET');
    expectError(await call('/api/v1/mcp/tools', { method: 'PUT', headers: AUTH, body: '{}' }), 405);
  });

  it('404 JSON for an unknown path', async () => {
    expectError(await call('/nowhere'), 404, 'route_not_found');
    expectError(await call('/api/v1/mcp/extra', { method: 'POST', headers: AUTH, body: '{}' }), 404);
  });
});

describe('MCP Streamable HTTP on /api/v1/mcp', () => {
  async function connect(token = KEY): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: 'contract-test', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('initializes and lists the same tools with their JSON Schemas', async () => {
    const client = await connect();
    try {
      expect(client.getServerVersion()?.name).toBe('hearth-tool-server');
      expect(client.getServerCapabilities()?.tools).toBeDefined();
      const { tools: listed } = await client.listTools();
      expect(listed.map((t) => t.name)).toEqual([
        'healthcheck',
        'weather',
        'boom',
        'throws_value',
        'teapot',
        'slow',
        'bigint',
        'echo',
      ]);
      expect(listed.find((t) => t.name === 'weather')?.inputSchema).toEqual(weather.input_schema);
    } finally {
      await client.close();
    }
  });

  it('calls a tool through the same handler and validation', async () => {
    const client = await connect();
    try {
      const hc = await client.callTool({ name: 'healthcheck', arguments: {} });
      expect(hc.isError).toBeFalsy();
      expect(hc.structuredContent).toEqual({ ok: true });

      const w = await client.callTool({ name: 'weather', arguments: { city: 'Bergen' } });
      expect(w.structuredContent).toEqual({ city: 'Bergen', units: 'metric', temperature: 21 });
      expect(w.content).toEqual([
        { type: 'text', text: JSON.stringify({ city: 'Bergen', units: 'metric', temperature: 21 }) },
      ]);

      const e = await client.callTool({ name: 'echo', arguments: { value: 1 } });
      expect(e.structuredContent).toEqual({ args: { value: 1 }, transport: 'mcp' });
    } finally {
      await client.close();
    }
  });

  it('reports bad arguments, handler failures and ToolErrors as isError results', async () => {
    const client = await connect();
    try {
      const bad = await client.callTool({ name: 'weather', arguments: { city: 1 } });
      expect(bad.isError).toBe(true);
      expect(bad.content).toEqual([{ type: 'text', text: 'args/city must be string' }]);
      expect(bad.structuredContent).toMatchObject({ code: 'invalid_arguments', path: '/city' });

      const boom = await client.callTool({ name: 'boom', arguments: {} });
      expect(boom.isError).toBe(true);
      expect(JSON.stringify(boom)).not.toContain('secret-detail');

      const teapot = await client.callTool({ name: 'teapot', arguments: {} });
      expect(teapot.isError).toBe(true);
      expect(teapot.content).toEqual([{ type: 'text', text: 'the kettle service is down' }]);
    } finally {
      await client.close();
    }
  });

  it('answers an unknown tool with a JSON-RPC invalid-params error', async () => {
    const client = await connect();
    try {
      const err = await rejectionBy(() => client.callTool({ name: 'nope', arguments: {} }), McpError);
      expect(err.code).toBe(-32602);
    } finally {
      await client.close();
    }
  });

  it('refuses a wrong bearer with 401 JSON', async () => {
    await expect(connect('wrong')).rejects.toThrow(/401|Unauthorized/);
    const raw = await call('/api/v1/mcp', {
      method: 'POST',
      headers: {
        authorization: 'Bearer wrong',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expectError(raw, 401);
  });

  it('answers JSON-RPC errors from the transport as JSON (no Accept for both types)', async () => {
    const a = await call('/api/v1/mcp', {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(a.status).toBe(406);
    expect(a.body.jsonrpc).toBe('2.0');
    expect(a.body.error.code).toBe(-32000);
  });
});

/** A promise the test opens when it chooses. */
function latch(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/** A tool that opens `entered` when a call comes in, then answers `result` once the test opens `gate`. */
function gatedTool(name: string, description: string, result: JsonValue) {
  const entered = latch();
  const gate = latch();
  const tool = defineTool({
    name,
    description,
    input_schema: { type: 'object', properties: {} },
    handler: async () => (entered.open(), await gate.opened, result),
  });
  return { tool, entered, gate };
}

/** A tool server without a key on a free local port, logging nothing; `options` as for createToolServer. */
const openToolServer = (options: Omit<Parameters<typeof createToolServer>[0], 'apiKey' | 'port' | 'host' | 'logger'>) =>
  createToolServer({ apiKey: null, port: 0, host: '127.0.0.1', logger: createLogger('error', () => {}), ...options });

describe('limits and lifecycle', () => {
  it('503 with Retry-After when maxConcurrentCalls are running', async () => {
    const { tool, entered, gate } = gatedTool('block', 'Blocks until released', { done: true });
    const busy = openToolServer({ maxConcurrentCalls: 1, tools: [tool] });
    const { port } = await busy.listen();
    try {
      const url = `http://127.0.0.1:${port}/api/v1/mcp`;
      const first = fetch(url, {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify({ tool: 'block', args: {} }),
      });
      await entered.opened;
      const second = await fetch(url, {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify({ tool: 'healthcheck', args: {} }),
      });
      expect(second.status).toBe(503);
      expect(second.headers.get('retry-after')).toBe('1');
      expect(((await second.json()) as { code: string }).code).toBe('server_busy');
      gate.open();
      const done = await first;
      expect(done.status).toBe(200);
      expect(await done.json()).toEqual({ done: true });
      // apiKey null: the tool routes are open.
      const list = await fetch(`http://127.0.0.1:${port}/api/v1/mcp/tools`);
      expect(list.status).toBe(200);
    } finally {
      gate.open();
      await busy.close();
    }
  });

  it('close() is idempotent, stops listening, and a closed server cannot listen again', async () => {
    const s = createToolServer({
      apiKey: KEY,
      port: 0,
      host: '127.0.0.1',
      tools: [],
      logger: createLogger('error', () => {}),
    });
    const { port } = await s.listen();
    expect((await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: 'close' } })).status).toBe(200);
    await Promise.all([s.close(), s.close()]);
    await s.dispose();
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    await expect(s.listen()).rejects.toThrow(/closed/);
  });

  it('close() lets a running call finish within the grace period; meanwhile /health says 503', async () => {
    const { tool, entered, gate } = gatedTool('gated', 'Finishes when released', { finished: true });
    const s = openToolServer({ tools: [tool] });
    const { port } = await s.listen();
    // One kept-alive connection for /health, so a request can still arrive after the listen socket is closed.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await rawGet(port, '/health', agent)).toEqual({ status: 200, body: { ok: true } });
      const pending = fetch(`http://127.0.0.1:${port}/api/v1/mcp`, {
        method: 'POST',
        headers: JSON_TYPE,
        body: JSON.stringify({ tool: 'gated' }),
      });
      await entered.opened;
      const closing = s.close();
      expect(await rawGet(port, '/health', agent)).toEqual({ status: 503, body: { ok: false } });
      gate.open();
      await closing;
      const res = await pending;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ finished: true });
    } finally {
      gate.open();
      agent.destroy();
      await s.close();
    }
  });

  it('close() aborts calls that outlive the grace period and answers them 503', async () => {
    const entered = latch();
    let sawAbort = false;
    const s = openToolServer({
      shutdownGraceMs: 0,
      tools: [
        defineTool({
          name: 'stuck',
          description: 'Waits for its signal',
          input_schema: { type: 'object', properties: {} },
          handler: (_a, ctx) =>
            new Promise(
              (resolve) => (
                entered.open(),
                ctx.signal.addEventListener('abort', () => ((sawAbort = true), resolve(null)))
              ),
            ),
        }),
      ],
    });
    const { port } = await s.listen();
    const pending = fetch(`http://127.0.0.1:${port}/api/v1/mcp`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ tool: 'stuck' }),
    });
    await entered.opened;
    await s.close();
    const res = await pending;
    expect(res.status).toBe(503);
    expect(((await res.json()) as { code: string }).code).toBe('shutting_down');
    expect(sawAbort).toBe(true);
  });
});

describe('construction-time errors', () => {
  const base = { apiKey: KEY, port: 0, logger: createLogger('error', () => {}) };
  const tool = (overrides: Partial<ToolDefinition>): ToolDefinition => ({
    name: 't',
    description: 'd',
    input_schema: { type: 'object', properties: {} },
    handler: () => null,
    ...overrides,
  });

  it('rejects an input_schema ajv cannot compile', () => {
    expect(() =>
      createToolServer({
        ...base,
        tools: [tool({ input_schema: { type: 'object', properties: { a: { type: 'strin' } } } })],
      }),
    ).toThrow(ToolDefinitionError);
    expect(() =>
      createToolServer({
        ...base,
        tools: [tool({ input_schema: { type: 'object', properties: {}, requird: ['a'] } })],
      }),
    ).toThrow(/input_schema/);
  });

  it("rejects a schema without type 'object' or properties", () => {
    expect(() =>
      createToolServer({ ...base, tools: [tool({ input_schema: { type: 'array', properties: {} } as never })] }),
    ).toThrow(/type must be 'object'/);
    expect(() => createToolServer({ ...base, tools: [tool({ input_schema: { type: 'object' } as never })] })).toThrow(
      /properties/,
    );
  });

  it('rejects duplicate and malformed names, empty descriptions, missing handlers', () => {
    expect(() => createToolServer({ ...base, tools: [tool({}), tool({})] })).toThrow(/duplicate/);
    expect(() => createToolServer({ ...base, tools: [tool({ name: 'has space' })] })).toThrow(/name/);
    expect(() => createToolServer({ ...base, tools: [tool({ description: ' ' })] })).toThrow(/description/);
    expect(() => createToolServer({ ...base, tools: [tool({ handler: undefined as never })] })).toThrow(/handler/);
  });

  it('requires apiKey to be a key or an explicit null', () => {
    expect(() => createToolServer({ ...base, apiKey: '', tools: [] })).toThrow(/apiKey/);
    expect(() => createToolServer({ ...base, apiKey: 'has space', tools: [] })).toThrow(/apiKey/);
    expect(() => createToolServer({ ...base, apiKey: undefined as never, tools: [] })).toThrow(/apiKey/);
  });

  it('rejects nonsensical limits', () => {
    expect(() => createToolServer({ ...base, tools: [], toolTimeoutMs: 0 })).toThrow(/toolTimeoutMs/);
    expect(() => createToolServer({ ...base, tools: [], bodyLimitBytes: -1 })).toThrow(/bodyLimitBytes/);
    expect(() => createToolServer({ ...base, tools: [], port: 70000 })).toThrow(/port/);
  });

  it('lets the application replace the built-in healthcheck', async () => {
    const s = createToolServer({
      ...base,
      tools: [tool({ name: 'healthcheck', handler: () => ({ ok: true, deep: true }) })],
    });
    expect(s.tools.map((t) => t.name)).toEqual(['healthcheck']);
  });
});
