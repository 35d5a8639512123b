import type { Browser, BrowserContext } from 'playwright-core';
import { launchChromium, steadyContext } from './browser.js';
import { PASSWORD, startDashboard, USER, VIEWER, VIEWER_PASSWORD, type TestDashboard } from './dashboard-server.js';

/** A test file's dashboard, Chromium, and an admin's and a viewer's steady contexts (testing/browser.ts). */
export interface BrowserSession {
  d: TestDashboard;
  browser: Browser;
  admin: BrowserContext;
  viewer: BrowserContext;
  close(): Promise<void>;
}

/** Starts what a browser test file drives: call it in `beforeAll`, and `close()` in `afterAll`. */
export async function startBrowserSession(): Promise<BrowserSession> {
  const d = await startDashboard();
  const browser = await launchChromium();
  const viewer = await steadyContext(browser, { httpCredentials: { username: VIEWER, password: VIEWER_PASSWORD } });
  const admin = await steadyContext(browser, { httpCredentials: { username: USER, password: PASSWORD } });
  return {
    d,
    browser,
    admin,
    viewer,
    async close() {
      await viewer.close();
      await admin.close();
      await browser.close();
      await d.close();
    },
  };
}
