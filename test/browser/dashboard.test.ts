import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeModelHub } from '../fakes/fake-model-hub.ts';
import { type FakeUpstream, startFakeUpstream } from '../fakes/index.ts';
import { probeAppArchive } from '../helpers/app-archives.ts';
import {
  type HearthProcess,
  startHearthProcess,
  createUser,
  modelArgs,
  serveFlags,
} from '../helpers/hearth-process.ts';
import { startPullingServer } from '../helpers/pulling-server.ts';
import { tinyChatModel } from '../helpers/test-model.ts';
import { browserAvailable, launchChromium } from './chromium.ts';
import { callApi } from '../helpers/management-client.ts';
import OpenAI, { toFile } from 'openai';

/**
 * The dashboard in a real headless Chromium against a real `hearth serve` (instant engine, a fake OpenAI
 * upstream for projects). Every control is found by its role and accessible name, as a person using a
 * screen reader would find it. The flows run in order on one server: first-run setup, sign out, a wrong
 * password, sign in, keys, workspace + Yam + project, the playground, a member refused the users page.
 * A second server, whose model download is held at half and whose sessions end after 4 s idle, shows the
 * warm-up progress and an expired session sent back to sign in.
 */
const OWNER = { email: 'owner@example.com', password: 'correct horse battery staple' };
const MEMBER = { email: 'member@example.com', password: 'member password 123' };
const PROVIDER_KEY = 'sk-upstream-test-key-0123456789';

const run = browserAvailable();

describe.runIf(run)('dashboard in a browser', () => {
  let hearth: HearthProcess;
  let openai: FakeUpstream;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  const consoleErrors: string[] = [];
  const offOrigin: string[] = [];

  beforeAll(async () => {
    openai = await startFakeUpstream('openai', { apiKey: PROVIDER_KEY, reply: { text: 'Hello from upstream.' } });
    hearth = await startHearthProcess({
      args: modelArgs(await tinyChatModel(), 'local/instant', {
        engine: 'instant',
        'openai-base-url': openai.baseUrl,
        'provider-max-retries': 0,
      }),
    });
    await hearth.waitReady();
    browser = await launchChromium();
    owner = await browser.newContext({ baseURL: hearth.baseUrl });
    page = await owner.newPage();
    page.setDefaultTimeout(20_000);
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.origin !== hearth.baseUrl && u.protocol !== 'data:') offOrigin.push(r.url());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await hearth?.stop();
    await openai?.close();
  });

  const heading = (p: Page, name: string) => p.getByRole('heading', { name, exact: true });

  it('first-run setup: the link from the log creates the owner and signs them in', async () => {
    const link = /"url":"([^"]+\/setup\?token=[^"]+)"/.exec(hearth.logs())?.[1];
    expect(link, 'the setup link is in the log').toBeDefined();
    await page.goto(link!);
    await heading(page, 'Set up Hearth').waitFor();
    await page.getByRole('textbox', { name: 'Email' }).fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Confirm password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create owner' }).click();
    await heading(page, 'Overview').waitFor();
    expect(new URL(page.url()).pathname).toBe('/');
    await page.getByText(`${OWNER.email}`).waitFor();
    // The model card shows the shared model, ready.
    await page.getByText('local/instant').waitFor();
  });

  it('sign out returns to the sign-in page, and the pages need a session again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in to Hearth').waitFor();
    await page.getByText('You are signed out.').waitFor();
    await page.goto('/settings/keys');
    await heading(page, 'Sign in to Hearth').waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
  });

  it('a wrong password is refused with the API message, and the page stays on sign-in', async () => {
    await page.getByRole('textbox', { name: 'Email' }).fill(OWNER.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('invalid_credentials');
    expect(new URL(page.url()).pathname).toBe('/sign-in');
  });

  it('sign in goes to the page asked for', async () => {
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'API keys').waitFor(); // the ?next= page
    expect(new URL(page.url()).pathname).toBe('/settings/keys');
  });

  it('creates an API key with limits: shown once with a copy button, listed, then revoked', async () => {
    await page.getByRole('textbox', { name: 'Key name' }).fill('ci-key');
    await page.getByRole('textbox', { name: 'Requests per minute' }).fill('60');
    await page.getByRole('textbox', { name: 'Concurrent requests' }).fill('2');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByRole('textbox', { name: 'New API key' });
    await shown.waitFor();
    const key = await shown.inputValue();
    expect(key).toMatch(/^hk_[A-Za-z0-9]+_[A-Za-z0-9_-]+$/);
    expect(await page.getByRole('button', { name: 'Copy New API key' }).isVisible()).toBe(true);
    expect((await callApi(hearth, 'GET', '/api/inference/v1/models', undefined, { key })).status).toBe(200);

    const row = page.getByRole('row', { name: /ci-key/ });
    await row.getByText('60 req/min, 2 at once').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(key);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(key); // shown once: never again

    await row.getByRole('button', { name: 'Revoke ci-key' }).click();
    await row.getByRole('button', { name: 'Confirm revoking ci-key' }).click();
    await row.getByText('revoked').waitFor();
    expect((await callApi(hearth, 'GET', '/api/inference/v1/models', undefined, { key })).status).toBe(401);
  });

  it('creates a batch-priority key, lists its priority, and switches it to interactive (PATCH)', async () => {
    await page.getByRole('textbox', { name: 'Key name' }).fill('nightly');
    await page.getByRole('combobox', { name: 'Priority' }).selectOption('batch');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('textbox', { name: 'New API key' }).waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.getByRole('row', { name: /nightly/ });
    await row.getByRole('cell', { name: 'batch', exact: true }).waitFor();
    const listed = async () =>
      (
        await callApi<{ data: Array<{ name: string; limits: { priority: string } }> }>(hearth, 'GET', '/api/v1/keys')
      ).body.data.find((k) => k.name === 'nightly')?.limits.priority;
    expect(await listed()).toBe('batch');
    await row.getByRole('button', { name: 'Make nightly interactive' }).click();
    await row.getByRole('cell', { name: 'interactive', exact: true }).waitFor();
    expect(await listed()).toBe('interactive');
  });

  it('creates a workspace, its Yam and a project whose token is shown once, then rotates it', async () => {
    await page.getByRole('link', { name: 'Workspaces' }).click();
    await heading(page, 'Workspaces').waitFor();
    await page.getByRole('textbox', { name: 'Workspace name' }).fill('Client A');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await heading(page, 'Client A').waitFor();

    await page.getByRole('button', { name: 'Create Yam' }).click();
    await page.getByText(/Ready since/).waitFor();

    await page.getByRole('textbox', { name: 'Project name' }).fill('bot');
    await page.getByRole('combobox', { name: 'Provider' }).selectOption('openai');
    await page.getByRole('textbox', { name: 'Model' }).fill('gpt-4o-mini');
    await page.getByLabel('Provider API key').fill(PROVIDER_KEY);
    await page.getByRole('spinbutton', { name: 'Temperature' }).fill('0.3');
    await page.getByRole('button', { name: 'Create project' }).click();
    const tokenBox = page.getByRole('textbox', { name: 'Project token' });
    await tokenBox.waitFor();
    const token = await tokenBox.inputValue();
    expect(token).toMatch(/^hp_/);
    const endpoint = await page.getByRole('textbox', { name: 'Endpoint of bot' }).inputValue();
    expect(endpoint).toMatch(/\/api\/v1\/inference\/[^/]+\/chat\/completions$/);
    const project = page.getByRole('article', { name: 'Project bot' });
    await project.getByText('ready', { exact: true }).waitFor();
    await project.getByText('curl example').click();
    expect(await project.locator('pre').textContent()).toContain(endpoint);
    const call = (t: string) =>
      fetch(endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }),
      });
    expect((await call(token)).status).toBe(200);

    await page.getByRole('button', { name: 'Done' }).click();
    await tokenBox.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(token);

    await project.getByRole('button', { name: 'Rotate token of bot' }).click();
    await project.getByRole('button', { name: /Confirm rotation/ }).click();
    await tokenBox.waitFor();
    const rotated = await tokenBox.inputValue();
    expect(rotated).toMatch(/^hp_/);
    expect(rotated).not.toBe(token);
    expect((await call(token)).status).toBe(401);
    expect((await call(rotated)).status).toBe(200);
  });

  it('creates an app on the Yam, deploys an archive from the page, and it goes live behind its URL', async () => {
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.getByRole('textbox', { name: 'App name' }).fill('probe');
    await page.getByRole('button', { name: 'Create app' }).click();
    const app = page.getByRole('article', { name: 'App probe' });
    await app.waitFor();
    const href = await app.getByRole('link').getAttribute('href');
    expect(href).toMatch(/\/apps\/[^/]+\/?$/);
    const url = href!.replace(/\/$/, '');
    expect((await fetch(`${url}/whoami`)).status).toBe(503); // app_not_live until a release passes its health check
    if ((await app.getByRole('button', { name: 'Manage probe' }).count()) > 0)
      await app.getByRole('button', { name: 'Manage probe' }).click();
    await app.getByLabel('Archive (.tar.gz)').setInputFiles({
      name: 'probe.tar.gz',
      mimeType: 'application/gzip',
      buffer: probeAppArchive({ version: 'from-the-page', healthy: true }),
    });
    await app.getByRole('button', { name: 'Deploy archive' }).click();
    await app
      .getByRole('table', { name: 'Deployments' })
      .getByText('live', { exact: true })
      .waitFor({ timeout: 60_000 });
    const whoami = (await (await fetch(`${url}/whoami`)).json()) as { version: string; env: Record<string, string> };
    expect(whoami.version).toBe('from-the-page');
    expect(whoami.env.HEARTH_API_KEY).toMatch(/^hk_/);
  });

  it('the playground streams a reply from the shared model with its figures, and shows API errors as given', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await heading(page, 'Playground').waitFor();
    await expect
      .poll(() => page.getByRole('textbox', { name: 'Model' }).inputValue(), { timeout: 20_000 })
      .toBe('local/instant'); // filled from /health

    await page.getByLabel('API key').fill('hk_wrong_key');
    await page.getByRole('button', { name: 'Send' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/401.*invalid_api_key/s);

    await page.getByRole('button', { name: 'Create a playground key' }).click();
    await expect.poll(() => page.getByLabel('API key').inputValue(), { timeout: 20_000 }).toMatch(/^hk_/);
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me a story');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.getByRole('log', { name: 'Reply' });
    await page.getByRole('button', { name: 'Send' }).waitFor(); // enabled again: the stream ended
    await page.getByText(/prompt \+ \d+ completion = \d+ tokens/).waitFor();
    expect(await reply.textContent()).toContain('quick brown fox');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.getByText(/^\d+ ms$/).count()).toBe(1); // first-token time
  });

  it('the playground calls the Anthropic Messages API with the same key', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await heading(page, 'Playground').waitFor();
    await expect.poll(() => page.getByLabel('API key').inputValue(), { timeout: 20_000 }).toMatch(/^hk_/); // kept from the test before
    await page.getByRole('radio', { name: 'Anthropic Messages' }).check();
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me a story');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('button', { name: 'Send' }).waitFor(); // enabled again: the stream ended
    await page.getByText(/prompt \+ \d+ completion = \d+ tokens/).waitFor();
    expect(await page.getByRole('log', { name: 'Reply' }).textContent()).toContain('quick brown fox');
    expect(await page.getByText(/^(end_turn|max_tokens)$/).count()).toBe(1); // a Messages stop_reason, not a chat finish_reason
    expect(await page.getByRole('alert').count()).toBe(0);
    await page.getByRole('radio', { name: 'Chat completions' }).check();
  });

  it('the playground calls a project by its endpoint and token', async () => {
    const ws = (await (await owner.request.get('/api/v1/workspaces')).json()) as {
      data: Array<{ workspaceId: string }>;
    };
    const wsId = ws.data[0]!.workspaceId;
    const projects = (await (await owner.request.get(`/api/v1/workspaces/${wsId}/inference`)).json()) as {
      data: Array<{ projectId: string; endpoint: string }>;
    };
    const p = projects.data[0]!;
    const rotated = (await (
      await owner.request.post(`/api/v1/workspaces/${wsId}/inference/${p.projectId}/token`, {
        headers: { origin: hearth.baseUrl },
      })
    ).json()) as { token: string };
    await page.getByRole('radio', { name: 'Inference project' }).check();
    await page.getByRole('option', { name: 'Client A / bot (ready)' }).waitFor({ state: 'attached' });
    await page.getByRole('combobox', { name: 'Project' }).selectOption({ label: 'Client A / bot (ready)' });
    expect(await page.getByRole('textbox', { name: 'Project endpoint' }).inputValue()).toBe(p.endpoint);
    expect(await page.getByRole('textbox', { name: 'Model' }).inputValue()).toBe('gpt-4o-mini');
    await page.getByLabel('Project token').fill(rotated.token);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('log', { name: 'Reply' }).getByText('Hello from upstream.').waitFor();
  });

  it("the Batches page lists the account's batches with state and counts, and downloads the output", async () => {
    const client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const line = (i: number) =>
      JSON.stringify({
        custom_id: `b-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'local/instant', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
      });
    const file = await client.files.create({
      file: await toFile(Buffer.from(`${line(0)}\n${line(1)}\n`), 'in.jsonl'),
      purpose: 'batch',
    });
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await page.getByRole('link', { name: 'Batches' }).click();
    await heading(page, 'Batches').waitFor();
    const row = page.getByRole('row', { name: new RegExp(batch.id) });
    await row.getByText('completed').waitFor(); // the page refreshes while the batch is active
    await row.getByText('2 / 2').waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      row.getByRole('link', { name: 'Download' }).click(),
    ]);
    const text = fs.readFileSync((await download.path())!, 'utf8');
    expect(
      text
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)
        .sort(),
    ).toEqual(['b-0', 'b-1']);
  });

  it('every control on every page has an accessible name', async () => {
    const ws = (await (await owner.request.get('/api/v1/workspaces')).json()) as {
      data: Array<{ workspaceId: string }>;
    };
    const pages: Array<[string, string]> = [
      ['/', 'Overview'],
      ['/settings/keys', 'API keys'],
      ['/settings/users', 'Users'],
      ['/workspaces', 'Workspaces'],
      [`/workspaces/${ws.data[0]!.workspaceId}`, 'Client A'],
      ['/playground', 'Playground'],
      ['/batches', 'Batches'],
    ];
    const CONTROL =
      /^\s*- (button|link|textbox|searchbox|combobox|listbox|checkbox|radio|spinbutton|slider|switch|tab|menuitem)(?=\s*$|:|\s\[)/;
    for (const [url, title] of pages) {
      await page.goto(url);
      await heading(page, title).waitFor();
      const unnamed = (await page.locator('body').ariaSnapshot()).split('\n').filter((line) => CONTROL.test(line));
      expect(unnamed, `unnamed controls on ${url}`).toEqual([]);
    }
  });

  it('the pages broke no Content-Security-Policy rule and loaded nothing from another origin', () => {
    expect(consoleErrors.filter((e) => /Content Security Policy|Refused to/i.test(e))).toEqual([]);
    expect(offOrigin).toEqual([]);
  });

  it('an owner adds a member, and the member is refused the users page', async () => {
    await page.getByRole('link', { name: 'Users' }).click();
    await heading(page, 'Users').waitFor();
    await page.getByRole('textbox', { name: 'User email' }).fill(MEMBER.email);
    await page.getByLabel('Initial password').fill(MEMBER.password);
    await page.getByRole('combobox', { name: 'Role' }).selectOption('member');
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.getByRole('row', { name: new RegExp(MEMBER.email) }).waitFor();

    const memberContext = await browser.newContext({ baseURL: hearth.baseUrl });
    try {
      const m = await memberContext.newPage();
      m.setDefaultTimeout(20_000);
      await m.goto('/');
      await m.getByRole('textbox', { name: 'Email' }).fill(MEMBER.email);
      await m.getByLabel('Password').fill(MEMBER.password);
      await m.getByRole('button', { name: 'Sign in' }).click();
      await heading(m, 'Overview').waitFor();
      await m.getByRole('link', { name: 'Users' }).click();
      await heading(m, 'Users').waitFor();
      expect(await m.getByRole('alert').textContent()).toContain('Only an owner');
      expect(await m.getByRole('button', { name: 'Add user' }).count()).toBe(0);
      // The API refuses too, not just the page.
      expect((await m.request.get('/api/v1/users')).status()).toBe(403);
    } finally {
      await memberContext.close();
    }
  });
});

describe.runIf(run)('dashboard while the model downloads, and session expiry', () => {
  let hearth: HearthProcess;
  let hub: FakeModelHub;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    // The shared model is pulled from a local hub that holds the download at half: the server stays warming up.
    ({ hearth, hub } = await startPullingServer(serveFlags({ workers: 1, slots: 1, 'session-idle-ms': 4000 })));
    const made = createUser(hearth.dataDir, OWNER);
    expect(made.status, made.stderr).toBe(0);
    browser = await launchChromium();
    page = await (await browser.newContext({ baseURL: hearth.baseUrl })).newPage();
    page.setDefaultTimeout(20_000);
  });

  afterAll(async () => {
    hub?.release();
    await browser?.close();
    await hearth?.stop();
    await hub?.close();
  });

  it('the Overview shows the model downloading, with its progress', async () => {
    await page.goto('/');
    await page.getByRole('textbox', { name: 'Email' }).fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText('Downloading the model').waitFor();
    const bar = page.getByRole('progressbar', { name: 'Warm-up progress' });
    await expect
      .poll(async () => Number(await bar.getAttribute('aria-valuenow')), { timeout: 20_000 })
      .toBeGreaterThan(0);
    expect(Number(await bar.getAttribute('aria-valuenow'))).toBeLessThan(100);
    expect(await page.getByText('pulling', { exact: true }).count()).toBe(1);
  });

  it('an expired session sends the user back to sign in, saying so', async () => {
    // A page that does not poll; the session ends after 4 s without a request.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('row', { name: /test/ }).waitFor();
    await new Promise((r) => setTimeout(r, 5000));
    await page.getByRole('link', { name: 'Workspaces' }).click();
    await page.getByText('Your session has expired. Sign in again.').waitFor();
    await page.getByRole('heading', { name: 'Sign in to Hearth' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
  });
});
