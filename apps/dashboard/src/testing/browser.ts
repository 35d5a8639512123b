import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Launches the machine's Chromium (Debian's `chromium` package; `.ci/run` installs it) headless through
 * playwright-core, which ships no browser of its own. CHROMIUM_PATH points elsewhere.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(executablePath)) {
    throw new Error(
      `no Chromium at ${executablePath}: install it (apt-get install chromium, as .ci/run does) or set CHROMIUM_PATH to a Chromium binary`,
    );
  }
  // No sandbox: CI runs as root, where Chromium refuses its sandbox; the pages are our own, on localhost.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
}

/** A page that records what went wrong in the browser: console errors (CSP violations among them), failed requests, 4xx and 5xx answers. */
export async function watchedPage(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { page, problems };
}

/**
 * A browser context whose pages start with auto-refresh switched off (as an operator can switch it), so a
 * test reading one page for longer than the refresh interval on a busy machine never sees it reload under
 * it. Auto-refresh itself is tested in auto-refresh-browser.test.ts with a plain context.
 */
export async function steadyContext(browser: Browser, options: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  // Injected by the browser driver before the page's own scripts; not subject to the page's CSP.
  await context.addInitScript({ content: "try { window.localStorage.setItem('tickwork.autoRefresh', 'off'); } catch (e) {}" });
  return context;
}
