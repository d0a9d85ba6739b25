import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * The example tool server as a real app on a Yam, deployed the way a user would: `hearth apps create` and
 * `hearth apps deploy APP examples/tool-server` (the CLI packs the directory: its vendored kit and built
 * dist/ go, node_modules never). Inside its sandbox it cannot see Hearth's tree; it gets the kit from its
 * own package.json (`"hearth": "file:vendor/hearth"`, installed offline) and a Hearth API key in
 * HEARTH_API_KEY. An MCP client then calls `complete` through `{base_url}/apps/{appId}/api/v1/mcp`, which
 * calls Hearth's shared endpoint (instant engine) with that key.
 */
const ROOT = path.resolve(import.meta.dirname, '../../..');
const EXAMPLE = path.join(ROOT, 'examples/tool-server');
const TOOL_KEY = 'tool-server-test-key-0123456789';

let hearth: HearthProcess;
let ws: string;
let appId: string;
let modelId: string;

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(
    process.execPath,
    [path.join(ROOT, 'bin/hearth.js'), 'apps', ...args, '--url', hearth.baseUrl, '--workspace', ws, '--json'],
    {
      encoding: 'utf8',
      env: { ...process.env, HEARTH_API_KEY: hearth.key },
      timeout: 120_000,
    },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  execFileSync(process.execPath, ['--import', 'tsx', path.join(EXAMPLE, 'vendor-kit.ts')], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  hearth = await startHearthProcess({
    args: ['--model', await tinyModel(), '--engine', 'instant', '--app-start-timeout', '20'],
  });
  await hearth.waitReady();
  const headers = { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' };
  modelId = (
    (await (await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers })).json()) as {
      data: Array<{ id: string }>;
    }
  ).data[0]!.id;
  ws = (
    (await (
      await fetch(`${hearth.baseUrl}/api/v1/workspaces`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'tools' }),
      })
    ).json()) as { workspaceId: string }
  ).workspaceId;
  await fetch(`${hearth.baseUrl}/api/v1/workspaces/${ws}/yam`, { method: 'PUT', headers });
  for (let i = 0; i < 100; i++) {
    const yam = (await (await fetch(`${hearth.baseUrl}/api/v1/workspaces/${ws}/yam`, { headers })).json()) as {
      state: string;
    };
    if (yam.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);

afterAll(async () => {
  await hearth?.stop();
});

describe('the example tool server deployed on a Yam', () => {
  it('goes live with two CLI commands', async () => {
    const created = cli(
      'create',
      '--name',
      'tools',
      '--api-key-env',
      'HEARTH_API_KEY',
      `HEARTH_BASE_URL=${hearth.baseUrl}`,
      `TOOL_SERVER_API_KEY=${TOOL_KEY}`,
      `HEARTH_MODEL=${modelId}`,
      'HOST=127.0.0.1',
    );
    expect(created.status, created.stderr).toBe(0);
    appId = (JSON.parse(created.stdout) as { appId: string }).appId;
    const deployed = cli('deploy', appId, EXAMPLE);
    expect(deployed.status, `${deployed.stdout}\n${deployed.stderr}\n${hearth.logs().slice(-3000)}`).toBe(0);
    const result = JSON.parse(deployed.stdout.trim().split('\n').pop()!) as {
      deployment: { state: string; buildLog: string[] };
      app: { url: string; state: string };
    };
    expect(result.deployment.state).toBe('live');
    expect(result.deployment.buildLog.join('\n')).toContain('$ npm install --omit=dev');
    expect(result.app).toMatchObject({ state: 'running', url: `${hearth.baseUrl}/apps/${appId}/` });
  }, 180_000);

  it("answers an MCP client's tools/call complete through the proxy, with the key the Yam injected", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${hearth.baseUrl}/apps/${appId}/api/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOOL_KEY}` } },
    });
    const client = new Client({ name: 'apps-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('complete');
      const result = await client.callTool({ name: 'complete', arguments: { prompt: 'Say something', max_tokens: 8 } });
      expect(result.isError ?? false).toBe(false);
      const text = (result.content as Array<{ type: string; text: string }>)[0]!.text;
      const answer = JSON.parse(text) as { content: string; model: string; usage: { completion_tokens: number } };
      expect(answer.model).toBe(modelId);
      expect(answer.usage.completion_tokens).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    // The same tool over the plain {tool, args} shape, and the tool server's own auth still applies.
    const plain = await fetch(`${hearth.baseUrl}/apps/${appId}/api/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOOL_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'complete', args: { prompt: 'Hi', max_tokens: 4 } }),
    });
    expect(plain.status).toBe(200);
    const wrongKey = await fetch(`${hearth.baseUrl}/apps/${appId}/api/v1/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong', 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'healthcheck', args: {} }),
    });
    expect(wrongKey.status).toBe(401);
  });

  it('shows its logs through the CLI', () => {
    const logs = cli('logs', appId, '--lines', '50');
    expect(logs.status, logs.stderr).toBe(0);
    const lines = JSON.parse(logs.stdout) as Array<{ stream: string; line: string }>;
    expect(lines.some((l) => l.line.includes('tool server listening'))).toBe(true);
    expect(logs.stdout).not.toContain(hearth.key);
  });
});
