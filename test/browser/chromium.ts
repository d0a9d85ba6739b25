import fs from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core (no browser download). `.ci/apt-packages` installs it in CI;
 * HEARTH_CHROMIUM points elsewhere. Headless, no sandbox (containers), no background traffic. Each launch gets a
 * fresh, empty profile: playwright-core creates a temporary user-data-dir itself (it refuses one in `args`)
 * and removes it on close; each test user gets its own isolated context on top.
 */
const CANDIDATES = [process.env.HEARTH_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => !!p,
);

export const chromiumPath: string | undefined = CANDIDATES.find((p) => fs.existsSync(p));

/**
 * Whether the browser suite can run here. In CI a missing Chromium is a failure, never a skip: this throws
 * at import, so the suite fails loudly. Elsewhere the suite skips, saying why.
 */
export function browserAvailable(): boolean {
  if (chromiumPath) return true;
  if (process.env.CI === 'true')
    throw new Error(
      `Chromium not found (looked at ${CANDIDATES.join(', ')}): .ci/apt-packages installs it; the browser suite must run in CI`,
    );
  console.warn('browser tests skipped: no Chromium here (set HEARTH_CHROMIUM or install the chromium package)');
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}
