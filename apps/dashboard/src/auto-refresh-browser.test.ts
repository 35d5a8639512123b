/**
 * Auto-refresh in a real browser (headless Chromium) under the pages' Content-Security-Policy: on by
 * default, the page reloads itself (without its flash message), the header's checkbox switches it off and
 * the browser remembers that; the script is the only one the policy lets run.
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTO_REFRESH_SECONDS } from './pages/auto-refresh.js';
import { launchChromium, watchedPage } from './testing/browser.js';
import { PASSWORD, startDashboard, USER, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
let browser: Browser;
let admin: BrowserContext;

beforeAll(async () => {
  d = await startDashboard();
  browser = await launchChromium();
  admin = await browser.newContext({ httpCredentials: { username: USER, password: PASSWORD } });
});
afterAll(async () => {
  await admin?.close();
  await browser?.close();
  await d?.close();
});

const RELOAD_WAIT_MS = AUTO_REFRESH_SECONDS * 1000 * 4; // a generous deadline for a busy machine

describe('auto-refresh', { timeout: 180_000 }, () => {
  it('reloads a page by itself, dropping its flash; switched off, it stays off across pages', async () => {
    const { page, problems } = await watchedPage(admin);
    await page.goto(`${d.base}/jobs?flash=cancel-requested`);
    expect(await page.locator('#auto-refresh').isChecked()).toBe(true);
    expect(await page.locator('.flash').count()).toBe(1);
    // The reload is a navigation to the same page without ?flash (an event, not a sleep).
    await page.waitForURL(`${d.base}/jobs`, { timeout: RELOAD_WAIT_MS });
    await page.locator('h1').waitFor();
    expect(await page.locator('.flash').count()).toBe(0);

    await page.locator('#auto-refresh').uncheck();
    expect(await page.evaluate("window.localStorage.getItem('tickwork.autoRefresh')")).toBe('off');
    await page.goto(`${d.base}/processes`);
    expect(await page.locator('#auto-refresh').isChecked()).toBe(false);
    await page.locator('#auto-refresh').check();
    expect(await page.evaluate("window.localStorage.getItem('tickwork.autoRefresh')")).toBe('on');
    expect(problems).toEqual([]); // the script ran under the policy: no CSP report, no error
  });

  it('lets no other script run: an inline script the page did not ship is refused by the policy', async () => {
    const res = await d.get('/jobs');
    const csp = res.headers.get('content-security-policy') ?? '';
    const scriptSrc = /script-src ([^;]*);/.exec(csp)?.[1] ?? '';
    expect(scriptSrc).toMatch(/^'sha256-[A-Za-z0-9+/]+=*'$/); // one hash: no 'self', no 'unsafe-inline'
    const { page } = await watchedPage(admin);
    const refused: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/.test(m.text())) refused.push(m.text());
    });
    await page.goto(`${d.base}/jobs`);
    // A script element added the way injected markup would be: the policy must refuse it.
    await page.evaluate("(() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1'; document.body.appendChild(s); })()");
    expect(await page.evaluate('window.injected')).toBeUndefined();
    expect(refused.length).toBeGreaterThan(0);
  });
});
