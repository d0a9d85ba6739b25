import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel } from '../../../models/test-model-path.ts';
import { type FakeUpstream, startFakeUpstream } from '../../fakes/index.ts';
import { collectOutput } from '../../helpers/child-output.ts';
import { type HearthProcess, startHearthProcess, modelArgs } from '../../helpers/hearth-process.ts';
import { hostToolRuns } from '../../helpers/host-tools.ts';
import { callApi, until } from '../../helpers/management-client.ts';
import { freePort } from '../../helpers/ports.ts';

/**
 * Proof that the Grafana dashboard works: Hearth (tiny chat model, /metrics behind a bearer token) is
 * scraped every second by a real Prometheus (the Debian binary, on 127.0.0.1, temp storage), traffic is
 * sent in two rounds, and then EVERY panel query of grafana/dashboards/hearth.json is evaluated through
 * Prometheus's HTTP API: each must succeed and return at least one series with a finite value.
 *
 * Provider panels (hearth_provider_*) need per-project traffic: when the management API exists
 * (POST /api/v1/workspaces), a workspace, its Yam and an OpenAI project pointed at a local fake OpenAI
 * are created and called (successes and an upstream failure); when it does not, those panels are
 * evaluated for errors only and their "has data" test is skipped, saying so.
 * Skipped as a whole, with the reason logged, when no `prometheus` binary is on PATH (.ci/apt-packages
 * installs it in CI).
 */

const ROOT = path.resolve(import.meta.dirname, '../../..');
const DASHBOARD = path.join(ROOT, 'grafana/dashboards/hearth.json');
const MODEL = 'local/tiny-chat';
const METRICS_TOKEN = 'proof-metrics-token-0c9b1f';
const PROVIDER_KEY = 'sk-proof-upstream-key-7f3e2a';
/** What Grafana's variables become for the proof: all instances and models, a 1-minute rate window (60 scrapes). */
const VARIABLES: Record<string, string> = { __rate_interval: '1m', __interval: '1m', instance: '.*', model: '.*' };

const PROMETHEUS = hostToolRuns('prometheus');
if (!PROMETHEUS)
  console.warn(
    'prometheus-proof.test.ts: SKIPPED: no `prometheus` binary on PATH (apt-get install prometheus; .ci/apt-packages does it in CI)',
  );

interface PanelQuery {
  panel: string;
  refId: string;
  expr: string;
  provider: boolean;
}

interface DashboardPanel {
  type: string;
  title: string;
  targets?: Array<{ refId: string; expr: string }>;
  panels?: DashboardPanel[];
}

/** Every target of every panel (rows' nested panels included), with Grafana's variables substituted. */
function dashboardQueries(): PanelQuery[] {
  const dash = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: DashboardPanel[] };
  const flat = dash.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const out: PanelQuery[] = [];
  for (const p of flat) {
    if (p.type === 'row') continue;
    expect(p.targets?.length, `panel "${p.title}" has no queries`).toBeGreaterThan(0);
    for (const t of p.targets!) {
      const expr = t.expr.replace(/\$(\w+)|\$\{(\w+)\}/g, (m, a?: string, b?: string) => {
        const v = VARIABLES[(a ?? b)!];
        if (v === undefined) throw new Error(`panel "${p.title}": unknown variable ${m}`);
        return v;
      });
      out.push({ panel: p.title, refId: t.refId, expr, provider: /hearth_provider_/.test(expr) });
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Prometheus {
  url: string;
  proc: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

/** Starts Prometheus on a free port with temp storage, scraping `target` every second with the bearer. */
async function startPrometheus(target: string, dir: string): Promise<Prometheus> {
  const config = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: hearth',
      '    metrics_path: /metrics',
      '    authorization:',
      '      type: Bearer',
      `      credentials: ${METRICS_TOKEN}`,
      '    static_configs:',
      `      - targets: ['${target}']`,
      '',
    ].join('\n'),
  );
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const proc = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const logs = collectOutput(proc);
    const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}`;
    const stop = async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    };
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && proc.exitCode === null) {
      const r = await fetch(`${url}/-/ready`).catch(() => null);
      if (r?.status === 200) return { url, proc, logs, stop };
      await sleep(200);
    }
    await stop();
    if (attempt >= 2) throw new Error(`prometheus did not become ready:\n${logs()}`);
  }
}

interface QueryResult {
  status: string;
  error?: string;
  data?: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

async function promQuery(prom: Prometheus, expr: string): Promise<QueryResult> {
  const r = await fetch(`${prom.url}/api/v1/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ query: expr }),
  });
  return (await r.json()) as QueryResult;
}

/** The value of a query returning one scalar-like series, or NaN when empty. */
async function promValue(prom: Prometheus, expr: string): Promise<number> {
  const r = await promQuery(prom, expr);
  const v = r.data?.result[0]?.value[1];
  return v === undefined ? Number.NaN : Number(v);
}

/** Prometheus scrapes every second: a read every 250 ms for 30 s. */
const POLL = { timeoutMs: 30_000, everyMs: 250 };

// ---- traffic -------------------------------------------------------------------------------------------

async function chat(h: HearthProcess, body: Record<string, unknown>, key = h.key): Promise<number> {
  const r = await fetch(`${h.baseUrl}/api/inference/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: 'user', content: 'Say hello.' }],
      temperature: 0,
      ...body,
    }),
  });
  await r.text();
  return r.status;
}

/** Shared-endpoint traffic, no provider involved: JSON and streams (stop and length), and errors. Returns finished generations. */
async function sharedTraffic(h: HearthProcess): Promise<number> {
  const ok = await Promise.all([
    chat(h, {}),
    chat(h, { max_tokens: 1 }),
    chat(h, { stream: true, stream_options: { include_usage: true } }),
    chat(h, { stream: true, max_tokens: 2 }),
  ]);
  expect(ok).toEqual([200, 200, 200, 200]);
  expect(
    await chat(h, {
      messages: [
        { role: 'system', content: 'A shared prefix.' },
        { role: 'user', content: 'Say hello.' },
      ],
    }),
  ).toBe(200);
  expect(await chat(h, {}, 'hk_nosuchkey_aaaaaaaaaaaaaaaaaaaaaaaa')).toBe(401);
  expect(await chat(h, { temperature: 7 })).toBe(400);
  expect(await chat(h, { model: 'local/nope' })).toBe(404);
  expect(
    (await fetch(`${h.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${h.key}` } })).status,
  ).toBe(200);
  expect((await fetch(`${h.baseUrl}/nothing-here`)).status).toBe(404);
  return 5;
}

interface ProjectAccess {
  endpoint: string;
  token: string;
}

/**
 * Creates workspace -> Yam -> OpenAI project through the management API (contract.md), or returns null
 * when that API is not there yet (404 route_not_found). Any other failure throws.
 */
async function createProject(h: HearthProcess): Promise<ProjectAccess | null> {
  type Answer = Record<string, unknown> & { error?: { code: string } };
  const ws = await callApi<Answer>(h, 'POST', '/api/v1/workspaces', { name: 'prometheus-proof' });
  if (ws.status === 404 && ws.body.error?.code === 'route_not_found') return null;
  expect(ws.status, JSON.stringify(ws.body)).toBe(201);
  const workspaceId = ws.body.workspaceId as string;
  const yam = await callApi<Answer>(h, 'PUT', `/api/v1/workspaces/${workspaceId}/yam`);
  expect([200, 201], JSON.stringify(yam.body)).toContain(yam.status);
  await until(
    async () => (await callApi<Answer>(h, 'GET', `/api/v1/workspaces/${workspaceId}/yam`)).body.state === 'ready',
    'the Yam to be ready',
    POLL,
  );
  const p = await callApi<Answer>(h, 'POST', `/api/v1/workspaces/${workspaceId}/inference`, {
    name: 'proof',
    provider: 'openai',
    model: 'gpt-4o-mini',
    providerApiKey: PROVIDER_KEY,
  });
  expect(p.status, JSON.stringify(p.body)).toBe(201);
  const projectId = p.body.projectId as string;
  await until(
    async () =>
      (await callApi<Answer>(h, 'GET', `/api/v1/workspaces/${workspaceId}/inference/${projectId}`)).body.state ===
      'ready',
    'the project to be ready',
    POLL,
  );
  return {
    endpoint: `${h.baseUrl}/api/v1/inference/${encodeURIComponent(projectId)}/chat/completions`,
    token: p.body.token as string,
  };
}

/** Project traffic through the fake OpenAI: a JSON and a streamed success, and one upstream failure. */
async function providerTraffic(project: ProjectAccess, fake: FakeUpstream): Promise<void> {
  const call = async (body: Record<string, unknown>) => {
    const r = await fetch(project.endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${project.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    });
    await r.text();
    return r.status;
  };
  expect(await call({})).toBe(200);
  expect(await call({ stream: true })).toBe(200);
  fake.script({ kind: 'fail', status: 500 });
  expect(await call({})).toBeGreaterThanOrEqual(500);
}

// ---- the proof -----------------------------------------------------------------------------------------

describe.skipIf(!PROMETHEUS)('every Grafana panel query returns data from a real Prometheus scraping Hearth', () => {
  let hearth: HearthProcess;
  let prom: Prometheus;
  let fake: FakeUpstream;
  let dir: string;
  let project: ProjectAccess | null = null;
  const queries = dashboardQueries();
  const results = new Map<string, QueryResult>();

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-prom-proof-'));
    fake = await startFakeUpstream('openai', { apiKey: PROVIDER_KEY });
    const model = await ensureTinyChatModel();
    hearth = await startHearthProcess({
      args: modelArgs(model, MODEL, {
        'metrics-token': METRICS_TOKEN,
        'openai-base-url': fake.baseUrl,
        'provider-max-retries': 0,
      }),
    });
    await hearth.waitReady();
    prom = await startPrometheus(`127.0.0.1:${hearth.port}`, dir);
    await until(async () => (await promValue(prom, 'up{job="hearth"}')) === 1, 'the first successful scrape', POLL);

    project = await createProject(hearth);
    if (project === null)
      console.warn(
        'prometheus-proof.test.ts: the management API (POST /api/v1/workspaces) is not served yet: no provider traffic; provider panels are checked for query errors only',
      );

    // Two rounds with scrapes between, so every rate() window sees an increase.
    let finished = 0;
    for (let round = 0; round < 2; round++) {
      finished += await sharedTraffic(hearth);
      if (project) await providerTraffic(project, fake);
      const expected = finished;
      await until(
        async () => (await promValue(prom, 'sum(hearth_request_success_total)')) === expected,
        `Prometheus to scrape round ${round + 1}`,
        POLL,
      );
      await sleep(2_500); // at least two more samples after the increase
    }

    for (const q of queries) results.set(`${q.panel}/${q.refId}`, await promQuery(prom, q.expr));
    const table = queries.map((q) => {
      const r = results.get(`${q.panel}/${q.refId}`)!;
      const values = r.data?.result.map((s) => s.value[1]) ?? [];
      return `${r.status === 'success' ? 'ok ' : 'ERR'} ${String(values.length).padStart(2)} series  ${q.panel} [${q.refId}]  ${values.slice(0, 3).join(', ')}`;
    });
    console.log(`dashboard queries evaluated at ${new Date().toISOString()}:\n${table.join('\n')}`);
  }, 180_000);

  afterAll(async () => {
    await prom?.stop();
    await hearth?.stop();
    await fake?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('Prometheus scrapes Hearth with the metrics bearer token', async () => {
    expect(await promValue(prom, 'up{job="hearth"}')).toBe(1);
    // The scrapes themselves are counted by Hearth (route metrics, 200): the token was accepted.
    expect(await promValue(prom, 'sum(hearth_http_requests_total{route="metrics",status="200"})')).toBeGreaterThan(2);
  });

  it('grafana/prometheus.yml (the documented scrape config) passes promtool check config', () => {
    const r = spawnSync('promtool', ['check', 'config', path.join(ROOT, 'grafana/prometheus.yml')], {
      encoding: 'utf8',
    });
    expect(r.error, 'promtool ships with the prometheus package').toBeUndefined();
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  });

  it('the dashboard has the panels the service promises', () => {
    const exprs = queries.map((q) => q.expr).join('\n');
    for (const metric of [
      'hearth_time_to_first_token_seconds_bucket',
      'hearth_inter_token_latency_seconds_bucket',
      'hearth_e2e_request_latency_seconds_bucket',
      'hearth_generation_tokens_total',
      'hearth_num_requests_waiting',
      'hearth_num_requests_running',
      'hearth_errors_total',
      'hearth_prefix_cache_hits_total',
      'hearth_model_state',
      'hearth_provider_request_duration_seconds_bucket',
      'hearth_provider_errors_total',
      'hearth_http_requests_total',
    ])
      expect(exprs, metric).toContain(metric);
    expect(exprs).toContain('histogram_quantile(0.99');
  });

  /** Each of `panelQueries` answered at least one series, and one of them has a finite value. */
  const expectFiniteSeries = (panelQueries: PanelQuery[]) => {
    for (const q of panelQueries) {
      const series = results.get(`${q.panel}/${q.refId}`)!.data!.result;
      expect(series.length, `${q.panel} [${q.refId}] returned no series: ${q.expr}`).toBeGreaterThan(0);
      expect(
        series.some((s) => Number.isFinite(Number(s.value[1]))),
        `${q.panel} [${q.refId}] has only NaN/Inf: ${q.expr}`,
      ).toBe(true);
    }
  };

  it('no panel query fails', () => {
    for (const q of queries) {
      const r = results.get(`${q.panel}/${q.refId}`)!;
      expect(r.status, `${q.panel} [${q.refId}] ${q.expr}: ${r.error}`).toBe('success');
      expect(r.data!.resultType).toBe('vector');
    }
  });

  it('every shared-model, HTTP and process panel returns a series with a finite value', () => {
    expectFiniteSeries(queries.filter((x) => !x.provider));
  });

  it('model state shows ready, and the token counters reached Prometheus intact', async () => {
    const state = results.get('Model state/A')!.data!.result;
    expect(state.map((s) => s.metric.state)).toEqual(['ready']);
    expect(await promValue(prom, 'sum(hearth_request_success_total)')).toBe(10);
    expect(await promValue(prom, 'sum(hearth_errors_total)')).toBeGreaterThanOrEqual(8);
  });

  it('every provider panel returns a series with a finite value (needs project traffic)', (ctx) => {
    if (project === null) {
      console.warn(
        'prometheus-proof.test.ts: SKIPPED provider panels: no management API to create an inference project yet',
      );
      ctx.skip();
    }
    expectFiniteSeries(queries.filter((x) => x.provider));
    const providers = new Set(
      queries
        .filter((x) => x.provider)
        .flatMap((q) => results.get(`${q.panel}/${q.refId}`)!.data!.result.map((s) => s.metric.provider)),
    );
    expect([...providers].filter(Boolean)).toEqual(['openai']);
  });
});
