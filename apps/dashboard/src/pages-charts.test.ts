/**
 * The chart pages (Overview, a queue's page, a catalog schedule's charts) against a private Redis holding
 * timelines written by the worker's own writer: the SVG carries the counts written (the y of each point),
 * titles and summaries for screen readers, UTC times on the axis, an empty state where nothing was counted;
 * the pages need a login, answer viewers too, send the strict CSP and change nothing in Redis.
 */
import { createLogger } from '@tickwork/core';
import { sampleMemory, TimelineWriter } from '@tickwork/operations';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTO_REFRESH_CSP_SOURCE } from './pages/auto-refresh.js';
import { startDashboard, VIEWER_AUTH, type TestDashboard } from './testing/dashboard-server.js';
import { withoutOwnScript } from './testing/own-script.js';

let d: TestDashboard;
beforeAll(async () => {
  d = await startDashboard('tw');
});
afterAll(async () => {
  await d?.close();
});

const page = async (path: string) => {
  const res = await d.get(path);
  return { status: res.status, csp: res.headers.get('content-security-policy'), body: await res.text() };
};
/** The chart `id`'s markup. */
const figure = (body: string, id: string) => new RegExp(`<figure class="chart" id="${id}">[\\s\\S]*?</figure>`).exec(body)?.[0] ?? '';
/** The y coordinates of a series' path in a chart. */
const ysOf = (chart: string, series: string): number[] => {
  const d = new RegExp(`data-series="${series}" d="([^"]*)"`).exec(chart)?.[1] ?? '';
  return [...d.matchAll(/[ML][\d.]+ ([\d.]+)/g)].map((m) => Number(m[1]));
};
/** Every key and its value: what a GET must leave as it was. */
const snapshot = async () => {
  const keys = (await d.redis.keys('*')).sort();
  return Promise.all(keys.map(async (k) => `${k}=${(await d.redis.dumpBuffer(k))?.toString('base64')}`));
};

describe('chart pages', { timeout: 60_000 }, () => {
  it('show nothing counted yet as empty charts', async () => {
    await d.flush();
    const o = await page('/overview');
    expect(o.status).toBe(200);
    expect(figure(o.body, 'redis-memory')).toContain('class="empty"');
    expect(figure(o.body, 'throughput-email')).toContain('No jobs counted in the last hour');
    const q = await page('/queue/email');
    expect(figure(q.body, 'wait-email')).toContain('No waits measured in the last hour');
    const s = await page('/schedules/reports.daily-revenue');
    expect(figure(s.body, 'outcomes-reports.daily-revenue')).toContain('No runs counted in the last 24 hours');
  });

  it('draw what the workers counted: throughput, dead letters, percentiles, Redis memory, a schedule', async () => {
    await d.flush();
    const w = new TimelineWriter({ redis: d.redis, prefix: 'tw', log: createLogger('test', 'silent') });
    const email = w.queue('email');
    for (let i = 0; i < 12; i++) email.attempt('completed', 40, 3);
    for (let i = 0; i < 3; i++) email.attempt('retried', 900, 3);
    for (let i = 0; i < 2; i++) email.attempt('failed', 900, -1), email.deadLettered();
    const schedule = w.schedule('reports.daily-revenue');
    schedule.lag(1500);
    schedule.ended('completed', 30_000);
    schedule.ended('failed', 100);
    await w.stop();
    await sampleMemory(d.redis, 'tw');

    const o = await page('/overview');
    expect(o.status).toBe(200);
    // The pages' policy: no script but the auto-refresh, allowed by its hash; the charts add none.
    expect(o.csp).toBe(`default-src 'none'; script-src ${AUTO_REFRESH_CSP_SOURCE}; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`);
    expect(withoutOwnScript(o.body)).not.toContain('<script');
    expect(o.body).toContain('<a href="/overview" class="active">Overview</a>');
    const throughput = figure(o.body, 'throughput-email');
    expect(throughput).toContain('<title id="throughput-email-title">Queue email: jobs completed and failed per min, the last hour</title>');
    expect(throughput).toContain('12 completed, 2 failed for good, 3 attempts failed and retried, 2 dead-lettered in the last hour.');
    // 60 minutes; one of them (the current or, past a minute boundary, the one before) holds the 12: on a
    // 0..20 axis 152 px high from y=24, 12 is at y=84.8 and 0 at y=176.
    const completed = ysOf(throughput, 'completed');
    expect(completed).toHaveLength(60);
    expect(completed.filter((y) => y === 84.8)).toHaveLength(1);
    expect(completed.filter((y) => y !== 84.8).every((y) => y === 176)).toBe(true);
    expect(ysOf(throughput, 'failed').filter((y) => y !== 176)).toEqual([160.8]);
    expect([...throughput.matchAll(/class="x-tick"[^>]*>([^<]*)</g)].map((m) => m[1]).every((t) => /^\d\d:\d\d UTC$/.test(t ?? ''))).toBe(true);
    expect(figure(o.body, 'throughput-billing')).toContain('No jobs counted in the last hour');
    expect(figure(o.body, 'dlq-inflow')).toContain('2 jobs dead-lettered in the last hour; email: 2.');
    const memory = figure(o.body, 'redis-memory');
    expect(memory).not.toContain('class="empty"');
    expect(memory).toMatch(/Latest sample [\d.]+ (KiB|MiB)/);
    expect(o.body).toContain('<a href="/queue/email?range=1h">email</a>');

    const q = await page('/queue/email?range=24h');
    expect(q.status).toBe(200);
    expect(q.body).toContain('<strong aria-current="true">the last 24 hours</strong>');
    expect(figure(q.body, 'throughput-email')).toContain('per 5 min');
    // Run times: 12 at 40 ms, 5 at 900 ms; waits: the 15 first attempts at 3 ms.
    expect(q.body).toMatch(/<dt>Run time<\/dt><dd>p50 [\d.]+ ms, p95 [^,]+, p99 [^(]+ \(17 measured\)<\/dd>/);
    expect(q.body).toContain('(15 measured)');
    // Percentiles only where something was measured: one step of the 288, a gap elsewhere.
    expect(ysOf(figure(q.body, 'run-email'), 'p50')).toHaveLength(1);
    expect(q.body).toContain('<a href="/dead-letters?queue=email">Dead letters</a>');

    const s = await page('/schedules/reports.daily-revenue');
    expect(s.status).toBe(200);
    const outcomes = figure(s.body, 'outcomes-reports.daily-revenue');
    expect(outcomes).toContain('1 completed, 1 failed, 0 attempts retried, 0 missed, 0 skipped, 0 cancelled in the last 24 hours.');
    expect(ysOf(outcomes, 'completed')).toHaveLength(24);
    // 1500 ms is in the bucket [1024, 2048): read back as its geometric middle.
    expect(s.body).toContain('Fire lag: p50 1.4 s');
    expect(s.body).toContain('<a href="/schedules/reports.daily-revenue?range=30d">the last 30 days</a>');

    const json = (await (await d.get('/api/queue/email')).json()) as { totals: unknown };
    expect(json.totals).toEqual({ completed: 12, failed: 2, retried: 3, deadLettered: 2 });
  });

  it('need a login, answer viewers, refuse a bad range or an unknown queue, and change nothing', async () => {
    for (const path of ['/overview', '/queue/email', '/api/overview', '/api/queue/email']) {
      expect((await fetch(`${d.base}${path}`)).status, path).toBe(401);
      expect((await fetch(`${d.base}${path}`, { headers: VIEWER_AUTH })).status, path).toBe(200);
    }
    expect((await page('/overview?range=7d')).status).toBe(400);
    expect((await page('/queue/no-such-queue')).status).toBe(404);
    const before = await snapshot();
    for (const path of ['/overview', '/overview?range=30d', '/queue/email', '/schedules/reports.daily-revenue?range=30d', '/api/overview']) expect((await d.get(path)).status, path).toBe(200);
    expect(await snapshot()).toEqual(before);
  });
});
