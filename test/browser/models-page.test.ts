import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, createUser } from '../helpers/hearth-process.ts';
import { tinyChatModel } from '../helpers/test-model.ts';
import { browserAvailable, launchChromium } from './chromium.ts';

/**
 * The dashboard's Models page in a real headless Chromium against a real `hearth serve` of two models (instant
 * engine): each model's state, an owner's load / unload / pull / remove, and a member who sees the list only.
 * Controls are found by role and accessible name.
 */
const OWNER = { email: 'owner@example.com', password: 'owner password 123' };
const MEMBER = { email: 'member@example.com', password: 'member password 123' };

describe.runIf(browserAvailable())('the Models page', () => {
  let hearth: HearthProcess;
  let browser: Browser;
  let modelsDir: string;

  beforeAll(async () => {
    const file = await tinyChatModel();
    modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-models-page-'));
    fs.copyFileSync(file, path.join(modelsDir, 'extra.gguf'));
    hearth = await startHearthProcess({
      args: [
        '--model',
        `${file},id=local/a`,
        '--model',
        `${file},id=local/b`,
        '--models-dir',
        modelsDir,
        '--engine',
        'instant',
        '--slots',
        '2',
      ],
    });
    for (const [who, role] of [
      [OWNER, 'owner'],
      [MEMBER, 'member'],
    ] as const) {
      const made = createUser(hearth.dataDir, who, role);
      expect(made.status, made.stderr).toBe(0);
    }
    await hearth.waitReady();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await hearth?.stop();
    fs.rmSync(modelsDir, { recursive: true, force: true });
  });

  async function signedIn(who: { email: string; password: string }): Promise<Page> {
    const context = await browser.newContext({ baseURL: hearth.baseUrl });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto('/sign-in?next=/models');
    await page.getByRole('textbox', { name: 'Email' }).fill(who.email);
    await page.getByLabel('Password', { exact: true }).fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Models', exact: true }).waitFor();
    return page;
  }

  const row = (page: Page, id: string) => page.getByRole('row').filter({ has: page.getByText(id, { exact: true }) });

  it('an owner sees each model with its state, loads and unloads one, pulls one from the models dir and removes it', async () => {
    const page = await signedIn(OWNER);
    await row(page, 'local/a').getByText('ready').waitFor();
    await row(page, 'local/b').getByText('unloaded').waitFor();
    await page.getByRole('button', { name: 'Load local/b' }).click();
    await row(page, 'local/b').getByText('ready').waitFor();
    await page.getByRole('button', { name: 'Unload local/b' }).click();
    await row(page, 'local/b').getByText('unloaded').waitFor();

    await page.getByRole('textbox', { name: 'Source' }).fill('extra.gguf');
    await page.getByRole('textbox', { name: 'Model id' }).fill('local/extra');
    await page.getByRole('button', { name: 'Pull model' }).click();
    await row(page, 'local/extra').getByText('unloaded').waitFor();

    // A path outside the models dir: the API's message, on the page.
    await page.getByRole('textbox', { name: 'Source' }).fill('/etc/passwd');
    await page.getByRole('button', { name: 'Pull model' }).click();
    await page
      .getByText(/inside the models dir|names no file|not a GGUF/)
      .first()
      .waitFor();

    await page.getByRole('button', { name: 'Remove local/extra' }).click();
    await page.getByRole('button', { name: 'Confirm removing local/extra' }).click();
    await row(page, 'local/extra').waitFor({ state: 'detached' });
    await page.context().close();
  }, 60_000);

  it('a member sees the models and their figures, with no control to change them', async () => {
    const page = await signedIn(MEMBER);
    await row(page, 'local/a').getByText('ready').waitFor();
    expect(await page.getByRole('button', { name: /^(Load|Unload|Remove) / }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Pull model' }).count()).toBe(0);
    await page.context().close();
  }, 60_000);
});
