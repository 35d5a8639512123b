import { catalog } from '@tickwork/jobs';
import { mergeOccurrence, previewSchedule, scheduleRegistryKey } from '@tickwork/schedules';
import { manualOccurrenceKey, occurrenceKey } from '@tickwork/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSchedules } from './data/schedules.js';
import { renderSchedules } from './pages/schedules.js';
import { startDashboard, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
beforeAll(async () => {
  d = await startDashboard();
});
afterAll(async () => {
  await d?.close();
});

const REPORT = 'reports.daily-revenue'; // 08:00 America/New_York

describe('GET /schedules', () => {
  it('lists every scheduled job of the catalog with its policies and next fire times in tz and UTC', async () => {
    const expected = previewSchedule(catalog.require(REPORT), { count: 5 });
    const res = await d.get('/schedules');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await res.text();
    for (const job of catalog.scheduled()) expect(page).toContain(`href="/schedules/${job.name}"`);
    // The 2nd..5th fire times computed just before the request are on the page even if the first passed meanwhile.
    for (const o of expected.next.slice(1)) {
      expect(page).toContain(`datetime="${o.utc}"`);
      expect(page).toContain(`datetime="${o.local}"`);
    }
    expect(page).toContain('America/New_York');
    expect(page).toContain('dst gap=shift fold=once');
    expect(page).toContain('missed once (window 7 d)'); // billing.charge-monthly
    expect(page).toContain('overlap skip');
    expect(page).toMatch(/<nav|<header/);
    for (const link of ['href="/schedules"', 'href="/dead-letters"', 'href="/queues"']) expect(page).toContain(link);
  });

  it('marks DST transitions among the next fire times', async () => {
    const rows = await loadSchedules({ catalog, redis: d.redis, prefix: d.prefix }, new Date('2026-03-06T12:00:00Z'));
    const page = renderSchedules(rows, new Date('2026-03-06T12:00:00Z')).value;
    // 08:00 New York: Mar 7 is EST (13:00Z), Mar 8 is EDT (12:00Z).
    expect(page).toContain('datetime="2026-03-07T13:00:00.000Z"');
    expect(page).toContain('datetime="2026-03-08T12:00:00.000Z"');
    expect(page).toContain('DST UTC-05:00 → UTC-04:00');
  });

  it('shows registration, last success and failure with its error, health, and the history of one schedule', async () => {
    await d.redis.hset(scheduleRegistryKey(d.prefix), REPORT, JSON.stringify({ queue: 'reports', speedupMs: null }));
    const nominal = new Date(Date.now() - 3600_000);
    const id = occurrenceKey(REPORT, nominal);
    await mergeOccurrence(
      d.redis,
      d.prefix,
      REPORT,
      id,
      nominal.getTime(),
      { startedAt: new Date(nominal.getTime() + 1000).toISOString(), endedAt: new Date(nominal.getTime() + 2000).toISOString(), attempts: 3, outcome: 'failed', error: 'warehouse <b>down</b>' },
      { id, schedule: REPORT, nominal: nominal.toISOString(), trigger: 'schedule', jobId: 'job-1', enqueuedAt: nominal.toISOString() },
      'lastFailure',
    );

    const list = await (await d.get('/schedules')).text();
    const row = list.slice(list.indexOf(`<tr id="${REPORT}">`), list.indexOf('</tr>', list.indexOf(`<tr id="${REPORT}">`)));
    expect(row).toContain('>registered</span>');
    expect(row).not.toContain('not registered');
    expect(row).toContain('warehouse &lt;b&gt;down&lt;/b&gt;');
    expect(row).toContain('class="badge failing"');
    expect(list).not.toContain('<b>down</b>');
    const weekly = list.slice(list.indexOf('<tr id="digest.weekly">'), list.indexOf('</tr>', list.indexOf('<tr id="digest.weekly">')));
    expect(weekly).toContain('>not registered</span>');

    const detail = await d.get(`/schedules/${REPORT}`);
    expect(detail.status).toBe(200);
    const html = await detail.text();
    expect(html).toContain(`datetime="${nominal.toISOString()}"`);
    expect(html).toContain('<span class="badge failing">failed</span>');
    expect(html).toContain('<td class="num">3</td>');
    expect(html).toContain('warehouse &lt;b&gt;down&lt;/b&gt;');

    const api = (await (await d.get('/api/schedules')).json()) as { name: string; registered: boolean; health: { status: string }; lastFailure: { error: string } | null; next: unknown[] }[];
    expect(api.map((r) => r.name).sort()).toEqual(catalog.scheduled().map((j) => j.name).sort());
    const report = api.find((r) => r.name === REPORT);
    expect(report).toMatchObject({ registered: true, health: { status: 'failing' }, lastFailure: { error: 'warehouse <b>down</b>' } });
    expect(report?.next).toHaveLength(5);
    expect(api.find((r) => r.name === 'sessions.cleanup')).toMatchObject({ registered: false, lastFailure: null });
  });

  it("marks a run in progress longer than the schedule's slowAfter as slow, as the watchdog alerts on it", async () => {
    const job = catalog.require(REPORT);
    const started = (at: Date) => ({ startedAt: at.toISOString(), attempts: 1 });
    const seed = async (nominal: Date, patch: Record<string, unknown>) => {
      const id = occurrenceKey(REPORT, nominal);
      await mergeOccurrence(d.redis, d.prefix, REPORT, id, nominal.getTime(), patch, { id, schedule: REPORT, nominal: nominal.toISOString(), trigger: 'schedule' });
    };
    const interval = 24 * 3600_000; // reports.daily-revenue is daily, with no slowAfter of its own
    expect(job.schedule?.slowAfter).toBeUndefined();
    await seed(new Date(Date.now() - interval - 10 * 60_000), started(new Date(Date.now() - interval - 5 * 60_000)));
    await seed(new Date(Date.now() - 10 * 60_000), started(new Date(Date.now() - 5 * 60_000)));
    const page = await (await d.get(`/schedules/${REPORT}`)).text();
    expect(page.match(/>running \(slow\)</g)).toHaveLength(1);
    expect(page.match(/<span class="badge neutral">running</g)).toHaveLength(1);
  });

  it('answers 404 for a schedule the catalog does not have, escaping the name', async () => {
    const res = await d.get(`/schedules/${encodeURIComponent('<img src=x>')}`);
    expect(res.status).toBe(404);
    const page = await res.text();
    expect(page).toContain('&lt;img src=x&gt;');
    expect(page).not.toContain('<img');
  });

  it.each(['/schedules', `/schedules/${REPORT}`, '/api/schedules'])('requires credentials for %s', async (path) => {
    expect((await fetch(`${d.base}${path}`)).status).toBe(401);
  });

  it('shows a completed manual run as completed, with manual and who asked in the Trigger column, and times in UTC', async () => {
    const enqueued = new Date(Date.now() - 60_000);
    const id = manualOccurrenceKey(REPORT, 'tok-1');
    await mergeOccurrence(
      d.redis,
      d.prefix,
      REPORT,
      id,
      enqueued.getTime(),
      { startedAt: new Date(enqueued.getTime() + 1000).toISOString(), endedAt: new Date(enqueued.getTime() + 2000).toISOString(), attempts: 1, outcome: 'manual' },
      { id, schedule: REPORT, nominal: enqueued.toISOString(), trigger: 'manual', jobId: 'job-manual-1', enqueuedAt: enqueued.toISOString(), by: 'alice' },
      'lastSuccess',
    );
    const html = await (await d.get(`/schedules/${REPORT}`)).text();
    const row = html.slice(html.indexOf(`<tr id="occ-${id}">`), html.indexOf('</tr>', html.indexOf(`<tr id="occ-${id}">`)));
    expect(row).toContain('<td>manual <span class="muted">by alice</span></td>');
    expect(row).toContain('<span class="badge ok" title="recorded as manual">completed</span>');
    expect(row).toMatch(/<time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time>/);
  });
});

