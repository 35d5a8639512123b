import { registerQueues } from '@tickwork/core';
import type { CapacityReport } from '@tickwork/operations';
import { beforeEach, describe, expect, it } from 'vitest';
import { deadLetterEmail, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';
import { withoutOwnScript } from './testing/own-script.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));
beforeEach(async () => {
  await d.redis.config('SET', 'maxmemory', String(256 * 1024 * 1024));
});

const XSS = '<script>alert("pwned")</script>';

describe('capacity page', () => {
  it('shows used memory against maxmemory, the sampled estimate per component and the DLQ per queue, escaped', async () => {
    await deadLetterEmail(d, 'mail-1');
    await d.redis.set(`${d.prefix}:ledger:email.send#1`, 'd|...');
    await registerQueues(d.redis, d.prefix, [XSS]);

    const res = await d.get('/capacity');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await res.text();
    expect(page).toContain('<a href="/capacity" class="active">Capacity</a>');
    expect(page).toMatch(/<strong>[\d.]+ [KM]iB<\/strong> of 256\.0 MiB maxmemory \(<strong>[\d.]+%<\/strong>\)/);
    expect(page).toContain('<code>noeviction</code>');
    expect(page).toMatch(/Shares are measured on all \d+ keys, not sampled\./); // a small Redis: every key measured
    expect(page).toMatch(/<tr><td>ledger<\/td><td class="num">[\d.]+ (B|KiB)<\/td>/);
    expect(page).toMatch(/<tr><td>email<\/td>(<td class="num">\d+<\/td>){5}<td class="num">1<\/td><td><time datetime="[^"]+">/);
    expect(page).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
    expect(withoutOwnScript(page)).not.toContain('<script');
    expect(page).not.toContain('role="alert"'); // settings are fine

    const api = (await (await d.get('/api/capacity')).json()) as CapacityReport;
    expect(api.memory).toMatchObject({ maxBytes: 256 * 1024 * 1024, policy: 'noeviction' });
    expect(api.estimate.sampledKeys).toBeGreaterThan(0);
    expect(api.estimate.components.map((c) => c.component)).toContain('ledger');
    expect(api.queues.find((q) => q.queue === 'email')?.dlq).toMatchObject({ entries: 1, oldestAt: expect.any(String) });
    expect(api.problems).toEqual([]);
  });

  it('says what to set when Redis has no maxmemory', async () => {
    await d.redis.config('SET', 'maxmemory', '0');
    const page = await (await d.get('/capacity')).text();
    expect(page).toContain('no maxmemory set');
    expect(page).toMatch(/<div class="flash error" role="alert">Redis has no maxmemory: set `maxmemory &lt;bytes&gt;`/);
  });

  it('works beside a BullMQ job scheduler (its keys are read as what they are, not as jobs)', async () => {
    // Stock BullMQ: a scheduler on one of the queues (`<queue>:repeat`, `<queue>:repeat:<id>`) and the job it adds.
    await d.queues.get('email').upsertJobScheduler('nightly-digest', { every: 3_600_000 }, { name: 'email.send', data: { to: 'a@example.com', subject: 's', body: 'b' } });
    expect(await d.redis.type(`${d.prefix}:email:repeat:nightly-digest`)).toBe('hash');
    for (let i = 0; i < 3; i++) {
      // RANDOMKEY draws: each request samples afresh, so a few of them make drawing the scheduler's keys certain.
      const page = await d.get('/capacity');
      expect(page.status).toBe(200);
      const api = await d.get('/api/capacity');
      expect(api.status).toBe(200);
      const report = (await api.json()) as CapacityReport;
      const email = report.queues.find((q) => q.queue === 'email');
      expect((email?.waiting ?? 0) + (email?.delayed ?? 0)).toBe(1); // the scheduler's job
    }
  });

  it.each(['/capacity', '/api/capacity'])('requires credentials for %s', async (path) => {
    expect((await fetch(`${d.base}${path}`)).status).toBe(401);
  });
});
