// A real browser for the dashboard's tests: Debian's headless Chromium (/usr/bin/chromium,
// installed by .ci/run) driven by playwright-core. Every request a page makes is recorded, so
// a test can say that nothing left the dashboard's origin.
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { skipUnlessCI } from './skip.js';

export const CHROMIUM = process.env.STEWARD_CHROMIUM ?? '/usr/bin/chromium';

// Launches Chromium, closed after the test; null (the test skipped, with why) when it is not
// installed and this is not CI.
export async function launchBrowser(t: TestContext): Promise<Browser | null> {
  if (!existsSync(CHROMIUM)) {
    skipUnlessCI(t, `no Chromium at ${CHROMIUM} (apt-get install chromium)`);
    return null;
  }
  const browser = await startChromium();
  t.after(() => browser.close());
  return browser;
}

// Launches headless Chromium; the caller closes it.
export function startChromium(): Promise<Browser> {
  // As root, Chromium refuses to start with its sandbox.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
}

export interface RecordedPage {
  context: BrowserContext;
  page: Page;
  // Every URL the page asked for, in order.
  requests: string[];
  // Uncaught errors and console errors of the page.
  errors: string[];
}

// A fresh context (its own cookies) with one page that records its requests.
export async function openPage(browser: Browser, viewport = { width: 1400, height: 900 }): Promise<RecordedPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => void requests.push(r.url()));
  page.on('pageerror', (e) => void errors.push(e.message));
  page.on('response', (r) => {
    if (r.status() >= 400) errors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  return { context, page, requests, errors };
}

// Logs in on the dashboard's login page with `token` and waits for the fleet.
export async function logIn(p: RecordedPage, adminUrl: string, token: string): Promise<void> {
  await p.page.goto(`${adminUrl}/ui/`);
  await p.page.fill('#token', token);
  await p.page.click('form.login button[type=submit]');
  await p.page.locator('main[data-page=fleet] table[data-table=fleet]').waitFor();
}
