import { redrivenJobId, type DlqListing } from '@tickwork/operations';
import { fillDeadLetters, filledEntryOf, type FillOptions } from '@tickwork/bullmq-engine/testing';
import { TOPOLOGIES } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startDashboard, type TestDashboard } from './testing/dashboard-server.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

// Every test on one Redis; on a Redis Cluster the pages, filters and HTML over a queue's tagged keys.
describe.each(TOPOLOGIES)('dead letters on %s Redis', (topology) => {
  let d: TestDashboard;
  beforeAll(async () => {
    d = await startDashboard('tw', undefined, topology);
  });
  afterAll(async () => {
    await d?.close();
  });

  /** More than one filter's scan window (2,000), so a rare match needs a second request. */
  const N = 2_500;
  const fill: FillOptions = { prefix: 'tw', queue: 'email', count: N, jobNames: ['email.send', 'digest.weekly', 'digest.morning'] };
  const expected = Array.from({ length: N }, (_, i) => filledEntryOf(fill, i));

  beforeEach(async () => {
    await d.flush();
    await fillDeadLetters(d.redis, fill);
  });

  async function api(query: string): Promise<DlqListing> {
    const res = await d.get(`/api/dead-letters?${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as DlqListing;
  }

  /** Follows `next` from the first page to the last; returns every page. */
  async function allPages(query: string): Promise<DlqListing[]> {
    const pages = [await api(query)];
    for (let last = pages[0]; last?.next; last = pages.at(-1)) {
      pages.push(await api(`${query}&cursor=${encodeURIComponent(last.next)}`));
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  describe('a large dead-letter queue, page by page', () => {
    it('pages return every entry exactly once, oldest first, foreign jobs (waiting, prioritized, delayed) included; counts from Redis', async () => {
      const prioritized = await d.queues.get('email.dlq').add('by-hand', { x: 1 }, { priority: 5 });
      const delayed = await d.queues.get('email.dlq').add('later', { x: 2 }, { delay: 3_600_000 });
      const pages = await allPages('queue=email&limit=300');
      expect(pages.map((p) => p.entries.length)).toEqual([300, 300, 300, 300, 300, 300, 300, 300, 102]);
      const ids = pages.flatMap((p) => p.entries.map((e) => e.dlqJobId));
      expect(ids).toEqual([...expected.map((e) => e.dlqJobId), String(prioritized.id), String(delayed.id)]);
      expect(pages[0]?.counts).toContainEqual({ queue: 'email', count: N + 2 });
      expect(pages[0]?.counts).toContainEqual({ queue: 'billing', count: 0 });
      expect(pages.at(-1)?.next).toBeNull();

      // Every queue: the empty ones are walked through without a page of their own.
      const everywhere = await allPages('limit=500');
      expect(everywhere.flatMap((p) => p.entries.map((e) => e.dlqJobId))).toEqual(ids);
    });

    it('filters by job name, reason and time over a bounded window per page, and finds every match across pages', async () => {
      const since = expected[250]?.deadLetteredAt ?? '';
      const until = expected[1_750]?.deadLetteredAt ?? '';
      const pages = await allPages(`name=digest.weekly&reason=TIMEOUT&since=${since}&until=${until}&limit=20`);
      const want = expected
        .map((e, i) => ({ e, i }))
        .filter(({ e, i }) => e.jobName === 'digest.weekly' && e.reason.includes('timeout') && i >= 250 && i < 1_750)
        .map(({ e }) => e.dlqJobId);
      expect(want.length).toBe(50);
      expect(pages.flatMap((p) => p.entries.map((e) => e.dlqJobId))).toEqual(want);
      for (const p of pages) {
        expect(p.scanned).toBeLessThanOrEqual(p.scanWindow);
        expect(p.entries.every((e) => e.job === 'digest.weekly' && /timeout/.test(e.reason))).toBe(true);
      }

      // A rare match: the first page stops at the scan window, says so, and the cursor continues the scan.
      const rare = expected[2_222]?.reason ?? '';
      const first = await api(`reason=${encodeURIComponent(rare)}`);
      expect(first).toMatchObject({ entries: [], scanned: first.scanWindow, windowFull: true });
      expect(first.next).not.toBeNull();
      const rest = await allPages(`reason=${encodeURIComponent(rare)}&cursor=${encodeURIComponent(first.next ?? '')}`);
      expect(rest.flatMap((p) => p.entries.map((e) => e.dlqJobId))).toEqual([expected[2_222]?.dlqJobId]);
    });

    it('a page continues right after the last entry shown even when earlier entries were removed meanwhile', async () => {
      const first = await api('queue=email&limit=100');
      for (const e of first.entries.slice(0, 60)) {
        expect((await d.post(`/dead-letters/email/${encodeURIComponent(e.dlqJobId)}/purge`, { _csrf: await token() }, { origin: d.origin })).status).toBe(303);
      }
      const second = await api(`queue=email&limit=100&cursor=${encodeURIComponent(first.next ?? '')}`);
      expect(second.entries.map((e) => e.dlqJobId)).toEqual(expected.slice(100, 200).map((e) => e.dlqJobId));
    });

    it('the HTML page shows one page with a link to the next that keeps the filter', async () => {
      const page = await (await d.get('/dead-letters?name=email.send&limit=25')).text();
      expect(page.match(/<tr>\n<td><input type="checkbox"[^>]*><\/td>\n<td>email<\/td>/g)).toHaveLength(25);
      expect(page).toContain('25 shown, ');
      expect(page).toContain('a filter examines at most 2000 entries per page');
      const next = /<a rel="next" href="([^"]+)">/.exec(page)?.[1]?.replaceAll('&amp;', '&') ?? '';
      expect(next).toMatch(/^\/dead-letters\?name=email\.send&limit=25&cursor=/);
      const second = await (await d.get(next)).text();
      expect(second).toContain(`<code>fill-75</code>`); // entry 75 is the 26th email.send
      expect(second).not.toContain(`<code>fill-72</code>`);
    });

    // The input checks and the bulk actions' raw keys are one Redis's business; paging is both.
    if (topology === 'standalone') {
      it.each([
        ['limit=0', /limit must be an integer from 1 to 500/],
        ['limit=501', /limit must be an integer from 1 to 500/],
        ['limit=ten', /limit must be an integer/],
        ['cursor=garbage', /invalid cursor/],
        ['since=yesterday', /since must be an ISO date/],
        ['since=2024-05-02&until=2024-05-01', /since must be before until/],
        ['queue=nope', /unknown queue (&quot;|")nope/],
        ['name=a&name=b', /name must be given once/],
      ])('answers 400 with a message for %s (JSON and page)', async (query, message) => {
        const res = await d.get(`/api/dead-letters?${query}`);
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: string }).error).toMatch(message);
        const page = await d.get(`/dead-letters?${query}`);
        expect(page.status).toBe(400);
        expect(await page.text()).toMatch(message);
      });
    }
  });

  async function token(): Promise<string> {
    const page = await (await d.get('/dead-letters?limit=1')).text();
    return /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  }

  if (topology === 'standalone') {
    describe('re-drive all and purge all, a batch per press', () => {
      it('re-drive all: 500 per press, the flash says how many remain; resumed after a crash midway, nothing is enqueued twice', async () => {
        const press = () => d.post('/dead-letters/email/redrive-all', { _csrf: tokenValue }, { origin: d.origin });
        const tokenValue = await token();
        const first = await press();
        expect(first.headers.get('location')).toBe(`/dead-letters?flash=redriven&n=500&left=${N - 500}`);
        expect(await (await d.get(first.headers.get('location') ?? '')).text()).toContain(`Re-drove 500 entries: back on their queue. ${N - 500} entries remain`);
        const origin = d.queues.get('email');
        expect(await origin.getJobCountByTypes('waiting')).toBe(500);

        // A re-drive that crashed after enqueuing the next 10 jobs and before removing their entries.
        for (const e of expected.slice(500, 510)) await origin.add(e.jobName, { n: -1 }, { jobId: redrivenJobId(e.dlqJobId, 1) });
        for (let left = N - 500; left > 0; left -= 500) {
          const res = await press();
          expect(res.headers.get('location')).toBe(`/dead-letters?flash=redriven&n=500${left > 500 ? `&left=${left - 500}` : ''}`);
        }
        expect(await origin.getJobCountByTypes('waiting')).toBe(N);
        for (const e of [expected[0], expected[505], expected[N - 1]]) expect(await origin.getJob(redrivenJobId(e?.dlqJobId ?? '', 1))).toBeTruthy();
        expect((await api('queue=email')).counts).toContainEqual({ queue: 'email', count: 0 });
      });

      it('purge all: 500 per press until empty', async () => {
        const tokenValue = await token();
        for (let left = N; left > 0; left -= 500) {
          const res = await d.post('/dead-letters/email/purge-all', { _csrf: tokenValue }, { origin: d.origin });
          expect(res.headers.get('location')).toBe(`/dead-letters?flash=purged&n=500${left > 500 ? `&left=${left - 500}` : ''}`);
        }
        expect(await d.redis.llen('tw:email.dlq:wait')).toBe(0);
        expect(await d.redis.exists(`tw:email.dlq:${expected[7]?.dlqJobId}`)).toBe(0);
      });
    });
  }
});
