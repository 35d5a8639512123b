import { catalog } from '@tickwork/jobs';
import { createCatalogSource, createSchedules, historyKeysOf, type ListPage, type Schedules, type ScheduleView } from '@tickwork/schedules';
import { createLogger } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { schedulePath } from './pages/schedule-actions.js';
import { useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';
import { withoutOwnScript } from './testing/own-script.js';

let d: TestDashboard;
let api: Schedules;
useDashboardPerFile((started) => {
  d = started;
  api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
});

const XSS = '<script>alert(1)</script>';
const MAIL = { to: 'ann@example.com', subject: 'hi', body: `see ${XSS}` };
const upsertMail = (id: string, over: Partial<{ pattern: string; tz: string }> = {}) =>
  api.upsert(id, { job: 'email.send', pattern: over.pattern ?? '0 9 * * *', tz: over.tz ?? 'Europe/Lisbon', data: MAIL });

async function csrfToken(path = '/schedules/reports.daily-revenue'): Promise<string> {
  const page = await (await d.get(path)).text();
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error(`no CSRF token on ${path}`);
  return token;
}

/** The page's section after `marker`, so assertions about runtime rows do not match the catalog's. */
const after = (page: string, marker: string) => page.slice(page.indexOf(marker));

describe('runtime schedules on /schedules', () => {
  it('lists the catalog first, then one page of runtime schedules with the count, escaping ids', async () => {
    await upsertMail(`user:${XSS}`);
    await upsertMail('user:ann', { tz: 'Asia/Kathmandu' });
    await api.upsert('cleanup:tenant-1', { job: 'sessions.cleanup', every: { minutes: 30 }, tz: 'UTC' });
    const res = await d.get('/schedules');
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page.indexOf('Catalog schedules')).toBeLessThan(page.indexOf('id="runtime"'));
    expect(page.indexOf('href="/schedules/reports.daily-revenue"')).toBeLessThan(page.indexOf('id="runtime"'));
    const runtime = after(page, 'id="runtime"');
    expect(runtime).toContain('<p class="muted" id="runtime-count">3 runtime schedules.');
    expect(runtime).toContain(`href="${schedulePath('user:ann')}"`);
    expect(runtime).toContain('every 30 min');
    expect(runtime).toMatch(/\d{4}-\d\d-\d\d 09:00:00 <span class="muted">UTC\+05:45<\/span>/); // Kathmandu's 09:00, its offset written as everywhere
    expect(runtime).toContain('user:&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(withoutOwnScript(page)).not.toContain('<script');
  });

  it('searches by id prefix and by job, and counts by job', async () => {
    await Promise.all(['a:1', 'a:2', 'b:1'].map((id) => upsertMail(id)));
    await api.upsert('a:cleanup', { job: 'sessions.cleanup', every: { minutes: 30 }, tz: 'UTC' });
    const ids = (page: string) => [...after(page, 'id="runtime"').matchAll(/<td class="wrap"><a href="\/schedules\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1] ?? ''));
    expect(ids(await (await d.get('/schedules?prefix=a%3A')).text())).toEqual(['a:1', 'a:2', 'a:cleanup']);
    const byJob = await (await d.get('/schedules?prefix=a%3A&job=email.send')).text();
    expect(ids(byJob)).toEqual(['a:1', 'a:2']);
    expect(byJob).toContain('3 runtime schedules of job email.send (the count ignores the id prefix)');
    expect(byJob).toContain('<option selected>email.send</option>');
    const json = (await (await d.get('/api/runtime-schedules?job=sessions.cleanup')).json()) as ListPage & { count: number };
    expect(json).toMatchObject({ count: 1, cursor: null, items: [expect.objectContaining({ id: 'a:cleanup', source: 'runtime' })] });
  });

  it('pages with Next links that keep the filter and walk every schedule once', async () => {
    const all = Array.from({ length: 7 }, (_, i) => `walk:${i}`);
    await Promise.all(all.map((id) => upsertMail(id)));
    const seen: string[] = [];
    let path: string | undefined = '/schedules?prefix=walk%3A&limit=3';
    for (let i = 0; path && i < 5; i++) {
      const page: string = await (await d.get(path)).text();
      const rows = [...after(page, 'id="runtime"').matchAll(/<td class="wrap"><a href="\/schedules\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1] ?? ''));
      expect(rows.length).toBeLessThanOrEqual(3);
      seen.push(...rows);
      path = /<a rel="next" href="([^"]+)">/.exec(page)?.[1]?.replaceAll('&amp;', '&');
      if (path) expect(path).toContain('prefix=walk%3A');
    }
    expect(seen).toEqual(all);
  });

  it('answers a bad listing parameter with 400 naming it', async () => {
    expect((await d.get('/schedules?limit=0')).status).toBe(400);
    const res = await d.get('/api/runtime-schedules?limit=abc');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'limit must be an integer from 1 to 500, got "abc"' });
  });
});

describe("a schedule's page and its buttons", () => {
  it('shows a runtime schedule: definition, next occurrence, state, data (escaped) and Pause, Run now, Remove', async () => {
    await upsertMail(`x:${XSS}`);
    const res = await d.get(schedulePath(`x:${XSS}`));
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<h1>x:&lt;script&gt;alert(1)&lt;/script&gt;</h1>');
    expect(page).toContain('cron <code>0 9 * * *</code>');
    expect(page).toContain('Europe/Lisbon');
    expect(page).toContain('<span class="badge ok">active</span>');
    expect(page).toContain('&quot;body&quot;: &quot;see &lt;script&gt;alert(1)&lt;/script&gt;&quot;');
    expect(withoutOwnScript(page)).not.toContain('<script');
    const path = schedulePath(`x:${XSS}`);
    for (const a of ['pause', 'run', 'remove']) expect(page).toContain(`action="${path}/${a}"`);
    expect(page).not.toContain(`action="${path}/resume"`);
    const json = (await (await d.get(`/api${path}`)).json()) as ScheduleView & { history: unknown[] };
    expect(json).toMatchObject({ id: `x:${XSS}`, source: 'runtime', job: 'email.send', paused: null, history: [] });
    expect((await d.get(schedulePath('no-such'))).status).toBe(404);
    expect((await d.get('/api/schedules/no-such')).status).toBe(404);
  });

  it('pauses with a reason, resumes and runs now; each POST answers 303 back to the page', async () => {
    await upsertMail('p:1');
    const token = await csrfToken(schedulePath('p:1'));
    const headers = { origin: d.origin };
    const paused = await d.post(`${schedulePath('p:1')}/pause`, { _csrf: token, reason: `vacation ${XSS}` }, headers);
    expect(paused.status).toBe(303);
    expect(paused.headers.get('location')).toBe(`${schedulePath('p:1')}?flash=paused`);
    expect((await api.get('p:1'))?.paused?.reason).toBe(`vacation ${XSS}`);
    const page = await (await d.get(`${schedulePath('p:1')}?flash=paused`)).text();
    expect(page).toContain('role="status">Paused');
    expect(page).toContain(`vacation &lt;script&gt;`);
    expect(page).toContain(`action="${schedulePath('p:1')}/resume"`);
    expect(page).not.toContain(`action="${schedulePath('p:1')}/pause"`);

    expect((await d.post(`${schedulePath('p:1')}/resume`, { _csrf: token }, headers)).headers.get('location')).toBe(`${schedulePath('p:1')}?flash=resumed`);
    expect((await api.get('p:1'))?.paused).toBeNull();
    expect((await d.post(`${schedulePath('p:1')}/resume`, { _csrf: token }, headers)).headers.get('location')).toContain('flash=not-paused');

    const next = (await api.get('p:1'))?.next;
    const ran = await d.post(`${schedulePath('p:1')}/run`, { _csrf: token }, headers);
    expect(ran.headers.get('location')).toContain('flash=ran');
    expect((await d.queues.get('email').getJobs(['waiting', 'delayed'])).map((j) => j.data)).toEqual([MAIL]);
    expect((await api.get('p:1'))?.next).toBe(next);
  });

  it('refuses a pause without a reason (400), a foreign origin or a missing token (403), and changes nothing', async () => {
    await upsertMail('p:2');
    const token = await csrfToken(schedulePath('p:2'));
    const path = `${schedulePath('p:2')}/pause`;
    const noReason = await d.post(path, { _csrf: token, reason: '  ' }, { origin: d.origin });
    expect(noReason.status).toBe(400);
    expect(await noReason.text()).toContain('a pause needs a reason');
    expect((await d.post(path, { _csrf: token, reason: 'r' }, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await d.post(path, { reason: 'r' }, { origin: d.origin })).status).toBe(403);
    expect((await d.post(path, { _csrf: 'wrong', reason: 'r' }, { origin: d.origin })).status).toBe(403);
    expect((await d.post(`${schedulePath('p:2')}/remove`, { _csrf: token }, { origin: 'http://evil.example' })).status).toBe(403);
    expect(await api.get('p:2')).toMatchObject({ paused: null });
    expect((await d.post(`${schedulePath('nope')}/pause`, { _csrf: token, reason: 'r' }, { origin: d.origin })).status).toBe(404);
  });

  it('removes a runtime schedule; a catalog schedule has no Remove button and refuses the POST', async () => {
    await upsertMail('r:1');
    const token = await csrfToken(schedulePath('r:1'));
    const removed = await d.post(`${schedulePath('r:1')}/remove`, { _csrf: token }, { origin: d.origin });
    expect(removed.headers.get('location')).toBe('/schedules?flash=removed');
    expect(await api.get('r:1')).toBeNull();
    expect(await (await d.get('/schedules?flash=removed')).text()).toContain('Removed the schedule');

    const refused = await d.post('/schedules/reports.daily-revenue/remove', { _csrf: token }, { origin: d.origin });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('catalog schedule');
  });

  it("keeps a removed schedule's history readable, marked removed, with what it was: page, JSON and the history header", async () => {
    await upsertMail('r:2');
    const run = await api.runNow('r:2');
    const path = schedulePath('r:2');
    const live = await (await d.get(path)).text();
    expect(live).toContain('(newest first, the last 5: all it keeps;'); // a runtime schedule keeps 5 by default
    expect(await (await d.get('/schedules/reports.daily-revenue')).text()).toContain('(newest first, the last 50 of the 500 it keeps;');

    const removed = await d.post(`${path}/remove`, { _csrf: await csrfToken(path) }, { origin: d.origin });
    expect(removed.headers.get('location')).toBe('/schedules?flash=removed');

    const res = await d.get(path);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<span class="badge stale" id="removed">removed</span>');
    expect(page).toMatch(/This schedule was removed at <time datetime="[^"]+">[^<]+<\/time>: it no longer fires\. Its history stays readable until <time/);
    expect(page).toContain('email.send <span class="muted">on</span> email');
    expect(page).toContain(`<td>manual</td>`);
    expect(page).toContain('(newest first, the last 5: all it keeps;');
    expect(page).not.toContain('method="post"'); // nothing left to pause, run or remove

    const json = (await (await d.get(`/api${path}`)).json()) as { id: string; job: string; removed: { at: string; historyExpiresAt: string }; history: { jobId: string }[] };
    expect(json).toMatchObject({ id: 'r:2', job: 'email.send', removed: { at: expect.any(String), historyExpiresAt: expect.any(String) } });
    expect(json.history.map((h) => h.jobId)).toEqual([run.jobId]);
    const days = (Date.parse(json.removed.historyExpiresAt) - Date.parse(json.removed.at)) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30.01);
    // Defined again: a live schedule, its history kept for good.
    await upsertMail('r:2');
    expect(await (await d.get(`/api${path}`)).json()).not.toHaveProperty('removed');
    expect(await d.redis.pttl(historyKeysOf(d.prefix, 'r:2').history)).toBe(-1);
  });

  it('pauses and resumes a catalog schedule through the same buttons; it has no Remove button', async () => {
    // What the scheduler's reconcile does at start: the catalog schedule becomes a record in the store.
    await createCatalogSource({ redis: d.redis, queues: d.queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require('reports.daily-revenue'));
    const path = '/schedules/reports.daily-revenue';
    const page = await (await d.get(path)).text();
    for (const a of ['pause', 'run']) expect(page).toContain(`action="${path}/${a}"`);
    expect(page).not.toContain('/remove"');
    const token = await csrfToken(path);
    expect((await d.post(`${path}/pause`, { _csrf: token, reason: 'warehouse migration' }, { origin: d.origin })).status).toBe(303);
    expect((await api.get('reports.daily-revenue'))?.paused?.reason).toBe('warehouse migration');
    const paused = await (await d.get(path)).text();
    expect(paused).toContain('<span class="badge stale">paused</span> since');
    expect(paused).toContain('warehouse migration');
    expect(paused).toContain(`action="${path}/resume"`);
    expect((await d.post(`${path}/resume`, { _csrf: token }, { origin: d.origin })).status).toBe(303);
    expect((await api.get('reports.daily-revenue'))?.paused).toBeNull();
    expect((await d.post(`${path}/run`, { _csrf: token }, { origin: d.origin })).headers.get('location')).toBe(`${path}?flash=ran`);
    expect((await d.queues.get('reports').getJobs(['waiting', 'delayed'])).map((j) => j.name)).toEqual(['reports.daily-revenue']);
  });

  it('a catalog schedule no scheduler has stored yet shows its page without buttons', async () => {
    const page = await (await d.get('/schedules/reports.daily-revenue')).text();
    expect(page).toContain('<h1>reports.daily-revenue');
    expect(page).not.toContain('method="post"');
    expect(page).toContain('No scheduler has stored this schedule yet');
    expect(await (await d.get('/api/schedules/reports.daily-revenue')).json()).toMatchObject({ name: 'reports.daily-revenue', stored: false, history: [] });
  });
});
