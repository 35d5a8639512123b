/**
 * The dashboard's actions in a real browser (headless Chromium), driven with clicks as an operator would:
 * ticking dead letters and re-driving the selected (or every entry a filtered listing shows), cancelling a
 * running job from the Running page, switching the charts' range, and Run now on a schedule's page. The
 * HTTP-level tests post these forms themselves; here the browser builds them (the checkboxes belong to the
 * bulk form through their `form` attribute, the hidden CSRF token, the Origin), follows the redirect and
 * shows the flash, under the pages' Content-Security-Policy.
 */
import { catalog } from '@tickwork/jobs';
import { createCatalogSource, createSchedules } from '@tickwork/schedules';
import { createLogger } from '@tickwork/core';
import { listDeadLetters, redrivenJobId, TimelineWriter } from '@tickwork/operations';
import { waitFor } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { schedulePath } from './pages/schedule-actions.js';
import { watchedPage } from './testing/browser.js';
import { startBrowserSession, type BrowserSession } from './testing/browser-session.js';
import { deadLetterEmail, USER, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
let viewer: BrowserContext;
let admin: BrowserContext;
let session: BrowserSession | undefined;

beforeAll(async () => {
  session = await startBrowserSession();
  ({ d, viewer, admin } = session);
});
beforeEach(async () => {
  await d.flush();
});
afterAll(async () => {
  await session?.close();
});

/** The listing's row of the entry whose original job id is `jobId`. */
const entryRow = (page: Page, jobId: string) => page.locator('tr', { has: page.locator(`code:text-is("${jobId}")`) });

describe('bulk dead-letter actions in a browser', () => {
  it('an admin ticks two of three dead letters and re-drives the selected: the page says 2, both are back on their queue, the third is still listed', async () => {
    const ids = [await deadLetterEmail(d, 'mail-bulk-1'), await deadLetterEmail(d, 'mail-bulk-2'), await deadLetterEmail(d, 'mail-bulk-3')];
    const { page, problems } = await watchedPage(admin);
    await page.goto(`${d.base}/dead-letters?queue=email`);
    for (const id of ids) expect(await page.getByRole('checkbox', { name: `select ${id}` }).count()).toBe(1);
    // Each row starts with its checkbox.
    expect(await entryRow(page, 'mail-bulk-1').locator('td').first().getByRole('checkbox').count()).toBe(1);

    await page.getByRole('checkbox', { name: `select ${ids[0]}` }).check();
    await page.getByRole('checkbox', { name: `select ${ids[1]}` }).check();
    await page.getByRole('button', { name: 'Re-drive selected', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'redriven');
    // Back on the same listing, its filter kept.
    expect(new URL(page.url()).searchParams.get('queue')).toBe('email');
    expect(await page.getByRole('status').textContent()).toBe('Re-drove 2 entries: back on their queue.');

    for (const id of ids.slice(0, 2)) {
      const back = await d.queues.get('email').getJob(redrivenJobId(id, 1));
      expect(back?.name).toBe('email.send');
      expect(await back?.getState()).toBe('waiting');
    }
    expect(await entryRow(page, 'mail-bulk-3').count()).toBe(1);
    expect(await entryRow(page, 'mail-bulk-1').count()).toBe(0);
    expect(await entryRow(page, 'mail-bulk-2').count()).toBe(0);
    expect((await listDeadLetters(d.queues, 'email')).map((e) => e.dlqJobId)).toEqual([ids[2]]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('an admin filters the listing by reason and re-drives every entry it shows; the entry the filter leaves out stays', async () => {
    await deadLetterEmail(d, 'mail-421-a', { reason: 'smtp 421: too many connections' });
    await deadLetterEmail(d, 'mail-421-b', { reason: 'smtp 421: too many connections' });
    const kept = await deadLetterEmail(d, 'mail-550', { reason: 'smtp 550: mailbox unavailable' });
    const { page, problems } = await watchedPage(admin);
    await page.goto(`${d.base}/dead-letters`);
    await page.getByLabel('Reason contains').fill('421');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('reason') === '421');
    expect(await entryRow(page, 'mail-550').count()).toBe(0);

    await page.getByRole('button', { name: 'Re-drive the 2 shown', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'redriven');
    expect(new URL(page.url()).searchParams.get('reason')).toBe('421');
    expect(await page.getByRole('status').textContent()).toBe('Re-drove 2 entries: back on their queue.');
    expect(await page.getByText('No matching entries on this page.').count()).toBe(1);
    expect((await d.queues.get('email').getWaiting()).map((j) => j.data.body).sort()).toEqual(['mail-421-a', 'mail-421-b']);
    expect((await listDeadLetters(d.queues, 'email')).map((e) => e.dlqJobId)).toEqual([kept]);
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('cancelling from the Running page in a browser', () => {
  it('an admin clicks Cancel on a running job, which then shows as cancelling; a viewer sees no Cancel button', async () => {
    await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 'hi', body: 'slow' }, { jobId: 'mail-running' });
    // A bare BullMQ worker with no processor takes the job and holds it: active, with no handler to stop it.
    const taker = new Worker('email', null, { connection: d.target.client(), prefix: d.queues.keyspace('email').bullPrefix });
    try {
      await waitFor(async () => (await taker.getNextJob('held', { block: false })) ?? undefined, { timeoutMs: 30_000, what: 'a running job' });

      const seen = await watchedPage(viewer);
      await seen.page.goto(`${d.base}/jobs`);
      expect(await entryRow(seen.page, 'mail-running').count()).toBe(1);
      expect(await seen.page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
      expect(seen.problems).toEqual([]);
      await seen.page.close();

      const { page, problems } = await watchedPage(admin);
      await page.goto(`${d.base}/jobs`);
      const row = entryRow(page, 'mail-running');
      expect(await row.locator('.badge').textContent()).toBe('running');
      await row.getByPlaceholder('reason (optional)').fill('stuck on the relay');
      await row.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.waitForURL((url) => url.searchParams.get('flash') === 'cancel-requested');
      expect(new URL(page.url()).searchParams.has('queue')).toBe(false); // back on every queue's view
      expect(await page.getByRole('status').textContent()).toContain('Cancel requested.');
      const after = entryRow(page, 'mail-running');
      expect(await after.locator('.badge').textContent()).toBe('cancelling');
      expect(await after.locator('.badge').getAttribute('title')).toMatch(new RegExp(`^cancel requested by ${USER} at .+: stuck on the relay$`));
      expect(await after.getByRole('button', { name: 'Cancel' }).count()).toBe(0); // requested once is enough
      expect(problems).toEqual([]);
      await page.close();
    } finally {
      await taker.close(true);
    }
  });
});

/** Every chart on the page: each a figure with its <svg>; returns their ids. */
async function charts(page: Page): Promise<string[]> {
  const figures = page.locator('figure.chart');
  expect(await figures.count()).toBeGreaterThan(0);
  expect(await page.locator('figure.chart > svg').count()).toBe(await figures.count());
  return Promise.all((await figures.all()).map(async (f) => (await f.getAttribute('id')) ?? ''));
}

describe("the charts' range in a browser", () => {
  it('the range links switch /overview and a queue page between the last hour, 24 hours and 30 days, charts drawn, no browser error', async () => {
    // Ten minutes of email counts, so the charts have lines at every range (a clock the writer reads per count).
    let at = Date.now() - 10 * 60_000;
    const timeline = new TimelineWriter({ redis: d.redis, prefix: d.prefix, log: createLogger('test', 'silent'), clock: () => at });
    for (let m = 0; m < 10; m++, at += 60_000) for (let i = 0; i < 5; i++) timeline.queue('email').attempt('completed', 30, 10);
    await timeline.stop();

    const { page, problems } = await watchedPage(viewer);
    await page.goto(`${d.base}/overview`);
    expect(await page.locator('.ranges [aria-current="true"]').textContent()).toBe('the last hour');
    for (const [label, range] of [['the last 24 hours', '24h'], ['the last 30 days', '30d'], ['the last hour', '1h']] as const) {
      await page.getByRole('link', { name: label, exact: true }).click();
      await page.waitForURL((url) => url.pathname === '/overview' && url.searchParams.get('range') === range);
      expect(await page.locator('.ranges [aria-current="true"]').textContent()).toBe(label);
      expect(await charts(page)).toEqual(expect.arrayContaining(['redis-memory', 'dlq-inflow', 'throughput-email']));
      expect({ range, lines: await page.locator('#throughput-email path.series').count() }).toEqual({ range, lines: 2 });
    }

    // The queue's heading link keeps the range; the queue page has its own range links.
    await page.getByRole('link', { name: 'the last 30 days', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('range') === '30d');
    await page.getByRole('link', { name: 'email', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/queue/email' && url.searchParams.get('range') === '30d');
    for (const [label, range] of [['the last hour', '1h'], ['the last 24 hours', '24h']] as const) {
      await page.getByRole('link', { name: label, exact: true }).click();
      await page.waitForURL((url) => url.pathname === '/queue/email' && url.searchParams.get('range') === range);
      expect(await page.locator('.ranges [aria-current="true"]').textContent()).toBe(label);
      expect(await charts(page)).toEqual(['throughput-email', 'wait-email', 'run-email']);
      expect(await page.locator('#throughput-email .empty').count()).toBe(0);
    }
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('Run now in a browser', () => {
  it("an admin clicks Run now on a runtime and on a catalog schedule's page: the page says a run was enqueued, its job exists", async () => {
    const api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    await api.upsert('digest:user-9', { job: 'sessions.cleanup', pattern: '0 9 * * *', tz: 'Europe/Lisbon' });
    // What a scheduler does at start: the catalog schedule becomes a record in the store, with its buttons.
    await createCatalogSource({ redis: d.redis, queues: d.queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require('reports.daily-revenue'));
    const seen = await watchedPage(viewer);
    await seen.page.goto(`${d.base}${schedulePath('digest:user-9')}`);
    expect(await seen.page.getByRole('button', { name: 'Run now' }).count()).toBe(0);
    await seen.page.close();

    for (const [id, job] of [['digest:user-9', 'sessions.cleanup'], ['reports.daily-revenue', 'reports.daily-revenue']] as const) {
      const { page, problems } = await watchedPage(admin);
      await page.goto(`${d.base}${schedulePath(id)}`);
      await page.getByRole('button', { name: 'Run now', exact: true }).click();
      await page.waitForURL((url) => url.searchParams.get('flash') === 'ran');
      expect(await page.getByRole('status').textContent()).toContain('Run now: one run enqueued');
      // The history's newest row is the manual run, linking to its job.
      const run = page.locator('tbody tr', { hasText: 'manual' });
      expect({ id, runs: await run.count() }).toEqual({ id, runs: 1 });
      const jobId = (await run.locator('td a code').textContent()) ?? '';
      const enqueued = await d.queues.get(catalog.require(job).queue).getJob(jobId);
      expect({ id, name: enqueued?.name, state: await enqueued?.getState() }).toEqual({ id, name: job, state: 'waiting' });
      expect(problems).toEqual([]);
      await page.close();
    }
  });
});
