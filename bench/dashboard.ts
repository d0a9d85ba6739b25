import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Page } from 'playwright-core';
import { ensureTinyChatModel } from '../models/test-model-path.ts';
import { launchChromium } from '../test/browser/chromium.ts';
import { startHearthProcess, modelArgs } from '../test/helpers/hearth-process.ts';
import { postChat } from './lib/chat-fetch.ts';

/**
 * bench:dashboard: the dashboard's weight and first load. Sizes of the built JS/CSS (raw and gzip -9, as the
 * server keeps them) from web/dist; first load of the sign-in page and of the signed-in Overview in headless
 * Chromium, the median of BENCH_LOADS fresh contexts (cold cache) against a local `hearth serve` (instant
 * engine): Navigation Timing, first contentful paint, and when the app's heading entered the DOM (the
 * signed-in Overview renders it after its session probe).
 * With --screenshots, also writes PNGs of the main pages to web/screenshots/ (seeded with a workspace,
 * a project, keys, a member and some traffic so the charts have data).
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.join(ROOT, 'web/dist');
const SHOTS = path.join(ROOT, 'web/screenshots');
const LOADS = Number(process.env.BENCH_LOADS ?? 5);
const OWNER = { email: 'ada@example.com', password: 'correct horse battery staple' };

function sizes() {
  const manifest = JSON.parse(fs.readFileSync(path.join(DIST, '.vite/manifest.json'), 'utf8')) as Record<
    string,
    { file: string; css?: string[] }
  >;
  const entry = manifest['index.html']!;
  const files = [entry.file, ...(entry.css ?? []), 'index.html'];
  return files.map((f) => {
    const body = fs.readFileSync(path.join(DIST, f));
    return { file: f, raw: body.length, gzip: zlib.gzipSync(body, { level: 9 }).length };
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Records, in the page, when the app's first heading is in the DOM (an init script: not subject to the page's CSP). */
const MARK_HEADING = `new MutationObserver((_, o) => { if (document.querySelector('h1')) { window.__headingAt = performance.now(); o.disconnect(); } }).observe(document, { childList: true, subtree: true });`;

async function firstLoad(page: Page, url: string, heading: string) {
  await page.addInitScript(MARK_HEADING);
  await page.goto(url);
  await page.getByRole('heading', { name: heading, exact: true }).waitFor();
  // Evaluated in the page (DOM types are not in this project's Node typings, hence a string).
  return (await page.evaluate(`(() => {
    const n = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByType('paint').find((p) => p.name === 'first-contentful-paint');
    const resources = performance.getEntriesByType('resource');
    return { ttfb: n.responseStart - n.startTime, domContentLoaded: n.domContentLoadedEventEnd - n.startTime, load: n.loadEventEnd - n.startTime, fcp: fcp ? fcp.startTime : NaN, shown: window.__headingAt, transferred: n.transferSize + resources.reduce((a, r) => a + r.transferSize, 0) };
  })()`)) as { ttfb: number; domContentLoaded: number; load: number; fcp: number; shown: number; transferred: number };
}

async function main() {
  const screenshots = process.argv.includes('--screenshots');
  const hearth = await startHearthProcess({
    args: modelArgs(await ensureTinyChatModel(), 'local/tiny-chat', { engine: 'instant' }),
  });
  const browser = await launchChromium();
  try {
    await hearth.waitReady();
    const link = /"url":"([^"]+\/setup\?token=([^"]+))"/.exec(hearth.logs());
    const token = link![2]!;
    const origin = { origin: hearth.baseUrl, 'content-type': 'application/json' };
    const setup = await fetch(`${hearth.baseUrl}/api/v1/setup`, {
      method: 'POST',
      headers: origin,
      body: JSON.stringify({ token, ...OWNER }),
    });
    if (setup.status !== 201) throw new Error(`setup: ${setup.status} ${await setup.text()}`);
    const cookie = setup.headers.get('set-cookie')!.split(';')[0]!;
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(hearth.baseUrl + p, {
        method,
        headers: { ...origin, cookie },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
      return r.status === 204 ? null : ((await r.json()) as Record<string, unknown>);
    };

    console.log('\n| file | raw bytes | gzip bytes |\n|---|---:|---:|');
    for (const s of sizes()) console.log(`| ${s.file} | ${s.raw} | ${s.gzip} |`);

    const signIn: Array<Awaited<ReturnType<typeof firstLoad>>> = [];
    const overview: Array<Awaited<ReturnType<typeof firstLoad>>> = [];
    for (let i = 0; i < LOADS; i++) {
      const ctx = await browser.newContext({ baseURL: hearth.baseUrl });
      const page = await ctx.newPage();
      signIn.push(await firstLoad(page, '/sign-in', 'Sign in to Hearth'));
      await ctx.close();
      const ctx2 = await browser.newContext({ baseURL: hearth.baseUrl });
      await ctx2.addCookies([{ name: 'hearth_session', value: cookie.split('=')[1]!, url: hearth.baseUrl }]);
      const page2 = await ctx2.newPage();
      overview.push(await firstLoad(page2, '/', 'Overview'));
      await ctx2.close();
    }
    const row = (name: string, xs: typeof signIn) =>
      console.log(
        `| ${name} | ${[median(xs.map((x) => x.ttfb)), median(xs.map((x) => x.domContentLoaded)), median(xs.map((x) => x.load)), median(xs.map((x) => x.fcp)), median(xs.map((x) => x.shown))].map((v) => v.toFixed(1)).join(' | ')} | ${median(xs.map((x) => x.transferred))} |`,
      );
    console.log(
      `\nFirst load, cold cache, median of ${LOADS} (ms from navigation start; bytes transferred incl. headers):\n| page | TTFB | DOMContentLoaded | load | first contentful paint | app heading rendered | transferred |\n|---|---:|---:|---:|---:|---:|---:|`,
    );
    row('sign-in', signIn);
    row('overview (signed in)', overview);

    if (screenshots) await takeScreenshots(hearth.baseUrl, cookie, call);
  } finally {
    await browser.close();
    await hearth.stop();
  }

  async function takeScreenshots(
    base: string,
    cookie: string,
    call: (m: string, p: string, b?: unknown) => Promise<Record<string, unknown> | null>,
  ) {
    fs.mkdirSync(SHOTS, { recursive: true });
    // Seed: keys, a workspace with its Yam and a project, a member, and traffic for the charts.
    const k = (await call('POST', '/api/v1/keys', {
      name: 'production',
      limits: { requestsPerMinute: 600, tokensPerMinute: 200000, maxConcurrent: 8 },
    }))!;
    await call('POST', '/api/v1/keys', { name: 'ci' });
    await call('POST', '/api/v1/users', {
      email: 'grace@example.com',
      password: 'member password 123',
      role: 'member',
    });
    const ws = (await call('POST', '/api/v1/workspaces', { name: 'Client A' }))!;
    const wsPath = `/api/v1/workspaces/${ws.workspaceId as string}`;
    await call('PUT', `${wsPath}/yam`);
    for (let i = 0; i < 50 && ((await call('GET', `${wsPath}/yam`))!.state as string) !== 'ready'; i++)
      await new Promise((r) => setTimeout(r, 100));
    await call('POST', `${wsPath}/inference`, {
      name: 'support bot',
      provider: 'anthropic',
      model: 'claude-3-5-haiku-latest',
      providerApiKey: 'sk-ant-demo-key-abcd',
      temperature: 0.3,
    });
    const traffic = async () => {
      for (let i = 0; i < 40; i++) {
        const r = await postChat(base, k.key as string, {
          model: 'local/tiny-chat',
          messages: [{ role: 'user', content: 'Hi' }],
          max_tokens: 20 + (i % 7) * 10,
          stream: true,
        });
        await r.text();
        await new Promise((res) => setTimeout(res, 1000)); // spread over several 10-second buckets
      }
    };
    const ctx = await browser.newContext({
      baseURL: base,
      viewport: { width: 1200, height: 760 },
      colorScheme: 'light',
    });
    await ctx.addCookies([{ name: 'hearth_session', value: cookie.split('=')[1]!, url: base }]);
    const page = await ctx.newPage();
    const shot = async (name: string) => {
      const file = path.join(SHOTS, `${name}.png`);
      await page.screenshot({ path: file });
      console.log(`screenshot ${path.relative(ROOT, file)} ${fs.statSync(file).size} bytes`);
    };
    await traffic();
    await page.goto('/');
    await page.waitForTimeout(3500);
    await shot('overview');
    await page.goto('/settings/keys');
    await page.getByRole('textbox', { name: 'Key name' }).fill('staging');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('textbox', { name: 'New API key' }).waitFor();
    await shot('api-keys');
    await page.goto(`/workspaces/${ws.workspaceId as string}`);
    await page.getByRole('heading', { name: 'Client A' }).waitFor();
    await page.getByText('curl example').click();
    await shot('workspace');
    await page.goto('/playground');
    await page.getByRole('button', { name: 'Create a playground key' }).click();
    await page.waitForTimeout(300);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(/completion = \d+ tokens/).waitFor();
    await shot('playground');
    await page.goto('/settings/users');
    await page.getByRole('row', { name: /grace/ }).waitFor();
    await shot('users');
    const anon = await browser.newContext({ baseURL: base, viewport: { width: 1200, height: 760 } });
    const p2 = await anon.newPage();
    await p2.goto('/sign-in');
    await p2.getByRole('heading', { name: 'Sign in to Hearth' }).waitFor();
    const file = path.join(SHOTS, 'sign-in.png');
    await p2.screenshot({ path: file, clip: { x: 300, y: 150, width: 600, height: 460 } });
    console.log(`screenshot ${path.relative(ROOT, file)} ${fs.statSync(file).size} bytes`);
    await anon.close();
    await ctx.close();
  }
}

await main();
