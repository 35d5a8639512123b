/**
 * The dashboard in a real browser (headless Chromium): what HTTP-level tests cannot see. The browser sends
 * its own Origin header and the form's hidden CSRF token when an operator clicks, follows the redirect and
 * shows the flash; Bull Board's single-page app loads its scripts and renders the queues under /queues; and
 * our pages' Content-Security-Policy blocks nothing they need (no console errors, no failed requests).
 */
import { catalog } from '@tickwork/jobs';
import { createSchedules } from '@tickwork/schedules';
import { listDeadLetters, redrivenJobId } from '@tickwork/operations';
import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { schedulePath } from './pages/schedule-actions.js';
import { launchChromium, steadyContext, watchedPage } from './testing/browser.js';
import { deadLetterEmail, PASSWORD, startDashboard, USER, VIEWER, VIEWER_PASSWORD, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
let browser: Browser;
let operator: BrowserContext;

beforeAll(async () => {
  d = await startDashboard();
  browser = await launchChromium();
  operator = await steadyContext(browser, { httpCredentials: { username: USER, password: PASSWORD } });
});
beforeEach(async () => {
  await d.redis.flushdb();
});
afterAll(async () => {
  await operator?.close();
  await browser?.close();
  await d?.close();
});


const deadLetter = (jobId: string) => deadLetterEmail(d, jobId);

describe('the dashboard in a browser', () => {
  it('asks for credentials everywhere but /healthz', async () => {
    const stranger = await steadyContext(browser);
    try {
      for (const path of ['/schedules', '/dead-letters', '/queues/', '/queues/api/queues']) {
        const page = await stranger.newPage();
        // The browser gets the Basic challenge and, with no credentials to offer, gives up on the page.
        const challenged = page.waitForResponse((r) => r.url() === `${d.base}${path}`);
        await page.goto(`${d.base}${path}`).catch((err: Error) => expect(err.message).toContain('ERR_INVALID_AUTH_CREDENTIALS'));
        const res = await challenged;
        expect({ path, status: res.status(), challenge: res.headers()['www-authenticate'] }).toEqual({ path, status: 401, challenge: expect.stringMatching(/^Basic /) });
        await page.close();
      }
      expect((await (await stranger.newPage()).goto(`${d.base}/healthz`))?.status()).toBe(200);
    } finally {
      await stranger.close();
    }
  });

  it('shows every scheduled job with its health, and one schedule with its history, without a browser error', async () => {
    const { page, problems } = await watchedPage(operator);
    await page.goto(`${d.base}/`);
    expect(new URL(page.url()).pathname).toBe('/schedules');
    await expect.poll(() => page.locator('h1').textContent()).toBe('Schedules');
    const scheduled = catalog.jobs.filter((j) => j.schedule).map((j) => j.name);
    expect(scheduled.length).toBeGreaterThan(0);
    for (const name of scheduled) {
      const row = page.locator(`tr[id="${name}"]`);
      expect(await row.count()).toBe(1);
      // No scheduler has run against this Redis: each schedule says so, in words an operator can act on.
      expect(await row.locator('.badge').allTextContents()).toContain('not registered');
    }
    const first = scheduled[0] as string;
    await page.locator(`tr[id="${first}"] a`).first().click();
    await page.waitForURL((url) => url.pathname !== '/schedules');
    expect(await page.locator('h1').textContent()).toContain(first);
    expect(await page.getByRole('heading', { level: 2, name: /Recent occurrences/ }).count()).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('re-drives a dead letter with its button: the job is back on its queue, the page says so', async () => {
    const id = await deadLetter('mail-browser-1');
    const { page, problems } = await watchedPage(operator);
    await page.goto(`${d.base}/dead-letters`);
    const row = page.locator('tr', { has: page.locator(`code:text-is("mail-browser-1")`) });
    expect(await row.count()).toBe(1);
    await row.getByRole('button', { name: 'Re-drive' }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'redriven');
    expect(await page.getByRole('status').textContent()).toContain('Re-drove 1 entry');
    expect(await page.locator('tr', { has: page.locator(`code:text-is("mail-browser-1")`) }).count()).toBe(0);

    const back = await d.queues.get('email').getJob(redrivenJobId(id, 1));
    expect(back?.name).toBe('email.send');
    expect(await back?.getState()).toBe('waiting');
    expect(await listDeadLetters(d.queues, 'email')).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("purges only after the second, deliberate click, from the entry's own page", async () => {
    const id = await deadLetter('mail-browser-2');
    const { page, problems } = await watchedPage(operator);
    await page.goto(`${d.base}/dead-letters`);
    await page.locator('tr', { has: page.locator(`code:text-is("mail-browser-2")`) }).getByRole('link', { name: 'email.send' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dead-letters/email/'));
    const purge = page.getByRole('button', { name: 'Purge for good' });
    expect(await purge.isVisible()).toBe(false); // folded away behind "Purge…"
    await page.getByText('Purge…').click();
    await purge.click();
    await page.waitForURL((url) => url.pathname === '/dead-letters');
    expect((await listDeadLetters(d.queues, 'email')).map((e) => e.dlqJobId)).not.toContain(id);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("pauses a runtime schedule with a reason and resumes it, with the buttons on its page", async () => {
    const api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    const id = 'digest:user-<b>42</b>';
    await api.upsert(id, { job: 'sessions.cleanup', pattern: '0 9 * * *', tz: 'Europe/Lisbon' });
    const { page, problems } = await watchedPage(operator);
    await page.goto(`${d.base}${schedulePath(id)}`);
    expect(await page.locator('h1').textContent()).toBe(id); // shown as text, not markup
    await page.getByLabel('Reason').fill('customer asked for a break');
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'paused');
    expect(await page.getByRole('status').textContent()).toContain('Paused');
    expect((await api.get(id))?.paused?.reason).toBe('customer asked for a break');
    expect(await page.getByText('customer asked for a break').count()).toBe(1);

    await page.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'resumed');
    expect((await api.get(id))?.paused).toBeNull();
    expect(await page.getByRole('button', { name: 'Pause' }).count()).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("a foreign page that auto-submits a text/plain form to Bull Board's add route adds nothing; the board's own calls work", async () => {
    const attacker = await servePage(
      `<form method="POST" enctype="text/plain" action="${d.base}/queues/api/queues/email/add"><input name='{"name":"x","data":{}}' value=""></form><script>document.forms[0].submit()</script>`,
    );
    try {
      const { page } = await watchedPage(operator);
      const answered = page.waitForResponse((r) => r.url() === `${d.base}/queues/api/queues/email/add` && r.status() !== 401);
      await page.goto(attacker.url);
      expect((await answered).status()).toBe(403);
      expect(await d.queues.get('email').getJobCounts()).toEqual(expect.objectContaining({ waiting: 0, delayed: 0, prioritized: 0 }));

      // Bull Board's page calls the same route with fetch from its own origin: the browser's Origin matches.
      await page.goto(`${d.base}/queues/`);
      const status = await page.evaluate(async () => {
        const res = await fetch('/queues/api/queues/email/add', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'email.send', data: { to: 'a@example.com', subject: 's', body: 'b' } }),
        });
        return res.status;
      });
      expect(status).toBe(200);
      expect((await d.queues.get('email').getWaiting()).map((j) => j.name)).toEqual(['email.send']);
      await page.close();
    } finally {
      await attacker.close();
    }
  });

  it('renders Bull Board under /queues: its app loads under its CSP and lists the queues and their dead-letter queues', async () => {
    const { page, problems } = await watchedPage(operator);
    const thirdParty: { url: string; outcome: string }[] = [];
    page.on('requestfinished', (r) => {
      if (!r.url().startsWith(d.base) && !r.url().startsWith('data:')) thirdParty.push({ url: r.url(), outcome: 'sent' });
    });
    page.on('requestfailed', (r) => {
      if (!r.url().startsWith(d.base)) thirdParty.push({ url: r.url(), outcome: r.failure()?.errorText ?? 'failed' });
    });
    await page.goto(`${d.base}/queues/`);
    for (const queue of catalog.queues) {
      await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 15_000 });
      await page.getByText(`${queue}.dlq`, { exact: true }).first().waitFor({ timeout: 15_000 });
    }
    // The one thing refused is the Google Fonts stylesheet Bull Board's page links: the operator's browser
    // calls no third party. Anything else blocked would mean the policy broke the board.
    expect(thirdParty.map((t) => t.outcome)).toEqual(thirdParty.map(() => 'csp'));
    expect(problems.filter((p) => !p.includes('fonts.googleapis.com'))).toEqual([]);
    await page.close();
  });
});

describe('a viewer in a browser', () => {
  it('sees the pages without action buttons, and Bull Board in its read-only mode', async () => {
    await deadLetter('mail-viewer-1');
    await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 's', body: 'b' }, { jobId: 'mail-later', delay: 600_000 });
    const viewer = await steadyContext(browser, { httpCredentials: { username: VIEWER, password: VIEWER_PASSWORD } });
    try {
      const { page, problems } = await watchedPage(viewer);
      await page.goto(`${d.base}/dead-letters`);
      expect(await page.locator('tr', { has: page.locator(`code:text-is("mail-viewer-1")`) }).count()).toBe(1);
      await page.goto(`${d.base}/jobs?queue=email`);
      expect(await page.locator('h1').textContent()).toBe('Running jobs');
      for (const path of ['/dead-letters', '/jobs?queue=email']) {
        await page.goto(`${d.base}${path}`);
        // The only buttons a viewer gets are the GET forms' (filter, show): nothing that posts.
        expect({ path, posting: await page.locator('form[method="post"]').count() }).toEqual({ path, posting: 0 });
        expect(await page.getByRole('button', { name: /Re-drive|Purge|Cancel/ }).count()).toBe(0);
      }
      expect(problems).toEqual([]);

      // The same delayed job on the board: the admin gets the board's actions, the viewer none of them.
      const boardActions = async (context: BrowserContext) => {
        const p = await context.newPage();
        await p.goto(`${d.base}/queues/queue/email?status=delayed`);
        await p.getByText('mail-later').first().waitFor({ timeout: 15_000 });
        const names = (await p.getByRole('button').allTextContents()).map((t) => t.trim()).filter((t) => /^[A-Za-z ]+$/.test(t));
        await p.close();
        return names;
      };
      expect(await boardActions(operator)).toEqual(expect.arrayContaining(['Promote all', 'Clean all']));
      const viewerSees = await boardActions(viewer);
      expect(viewerSees).not.toContain('Promote all');
      expect(viewerSees).not.toContain('Clean all');
      await page.close();
    } finally {
      await viewer.close();
    }
  });
});

/** Serves one HTML page from another origin (its own port), as a site the operator happens to open. */
async function servePage(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><html><body>${body}</body></html>`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return {
    url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
