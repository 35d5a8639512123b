/**
 * Finding a job in a real browser (headless Chromium): the search box on a page, the job page it lands on,
 * and the links from there (its schedule occurrence, its dead letter, its re-drive, Bull Board) followed by
 * clicks, under the pages' Content-Security-Policy, as a viewer (searching is a GET) and as an admin.
 */
import { catalog } from '@tickwork/jobs';
import { redrivenJobId } from '@tickwork/operations';
import { createSchedules } from '@tickwork/schedules';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { occurrenceAnchor } from './pages/links.js';
import { watchedPage } from './testing/browser.js';
import { startBrowserSession, type BrowserSession } from './testing/browser-session.js';
import { deadLetterEmail, type TestDashboard } from './testing/dashboard-server.js';

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

/** Types `id` into the page's search box and presses Enter; resolves once the next page has loaded. */
async function search(page: Page, id: string): Promise<void> {
  const before = page.url();
  await page.getByRole('searchbox', { name: 'Find by id' }).fill(id);
  await page.getByRole('searchbox', { name: 'Find by id' }).press('Enter');
  await page.waitForURL((url) => url.href !== before);
}

describe('finding a job in a browser', () => {
  it("a viewer searches a scheduled run's job id from a page, goes to its occurrence and back to the job", async () => {
    const api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    const schedule = 'digest:user-7';
    await api.upsert(schedule, { job: 'sessions.cleanup', pattern: '0 9 * * *', tz: 'Europe/Lisbon' });
    const { jobId, occurrence } = await api.runNow(schedule, { by: 'test' });
    const { page, problems } = await watchedPage(viewer);
    await page.goto(`${d.base}/dead-letters`);

    await search(page, jobId);
    expect(new URL(page.url()).pathname).toBe(`/jobs/${encodeURIComponent(catalog.require('sessions.cleanup').queue)}/${encodeURIComponent(jobId)}`);
    expect(await page.locator('#state').textContent()).toBe('waiting');

    await page.getByRole('link', { name: occurrence }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/schedules/'));
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#${occurrenceAnchor(occurrence)}`);
    const row = page.locator(`tr[id="${occurrenceAnchor(occurrence)}"]`);
    expect(await row.count()).toBe(1);
    await row.getByRole('link', { name: jobId }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/jobs/'));
    expect(await page.locator('h1').textContent()).toContain('sessions.cleanup');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a viewer searches a dead-lettered job: its page says where it went, the dead letter links back', async () => {
    const dlqId = await deadLetterEmail(d, 'mail-find-b1');
    const { page, problems } = await watchedPage(viewer);
    await page.goto(`${d.base}/processes`);
    await search(page, 'mail-find-b1');
    expect(await page.locator('h2#trail').textContent()).toBe('Where it went');
    await page.getByRole('link', { name: dlqId }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/dead-letters/email/'));
    expect(await page.getByRole('button').filter({ hasText: /Re-drive|Purge/ }).count()).toBe(0); // read-only
    await page.getByRole('link', { name: 'mail-find-b1' }).click();
    await page.waitForURL((url) => url.pathname === '/jobs/email/mail-find-b1');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('an admin re-drives a dead letter, then finds the original id and follows it to the new job and to Bull Board', async () => {
    const dlqId = await deadLetterEmail(d, 'mail-find-b2');
    const newId = redrivenJobId(dlqId, 1);
    const { page, problems } = await watchedPage(admin);
    await page.goto(`${d.base}/dead-letters`);
    await search(page, dlqId);
    await page.getByRole('button', { name: 'Re-drive' }).click();
    await page.waitForURL((url) => url.searchParams.get('flash') === 'redriven');

    await search(page, 'mail-find-b2');
    await page.getByRole('link', { name: newId }).click();
    await page.waitForURL((url) => url.pathname === `/jobs/email/${encodeURIComponent(newId)}`);
    expect(await page.locator('#state').textContent()).toBe('waiting');
    await page.getByRole('link', { name: 'On Bull Board' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/queues/queue/email/'));
    await page.getByText(newId).first().waitFor({ timeout: 15_000 });
    // Bull Board's page links a Google Fonts stylesheet the policy refuses; nothing else may fail.
    expect(problems.filter((p) => !p.includes('fonts.googleapis.com'))).toEqual([]);
    await page.close();
  });
});
