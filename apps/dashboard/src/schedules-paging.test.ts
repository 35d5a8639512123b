/**
 * The schedules pages over 100,000 runtime schedules (10,000 on a Redis Cluster): each request reads one page (`limit` records) and the
 * count Redis keeps, and the next cursor walks on. Not a timed test: it checks the shape that keeps a page
 * cheap however many schedules exist (no request loads them all).
 */
import { catalog } from '@tickwork/jobs';
import { createSchedules, type ListPage, type Schedules } from '@tickwork/schedules';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TOPOLOGIES } from '@tickwork/testkit';
import { startDashboard, type TestDashboard } from './testing/dashboard-server.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

// On a cluster 10,000: enough for pages over 16 shards on 3 masters, without a minute of upserts in CI.
describe.each(TOPOLOGIES)('on %s Redis', (topology) => {
  const N = topology === 'standalone' ? 100_000 : 10_000;
  let d: TestDashboard;
  let api: Schedules;
  const idOf = (i: number) => `digest:user-${String(i).padStart(6, '0')}`;

  beforeAll(async () => {
    d = await startDashboard('tw', undefined, topology);
    api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    // Through the API, 500 upserts in flight at a time: the way an application would create them.
    for (let from = 0; from < N; from += 500) {
      await Promise.all(Array.from({ length: Math.min(500, N - from) }, (_, k) =>
        api.upsert(idOf(from + k), { job: 'sessions.cleanup', pattern: `${(from + k) % 60} 9 * * *`, tz: 'Europe/Lisbon' }),
      ));
    }
  });
  afterAll(async () => {
    await d?.close();
  });

  type ApiPage = ListPage & { count: number };

  async function apiPage(query: string): Promise<ApiPage> {
    const res = await d.get(`/api/runtime-schedules?${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as ApiPage;
  }

  describe(`schedules pages over ${N.toLocaleString('en')} runtime schedules`, () => {
    it('a JSON page holds only `limit` items, counts all from Redis, and its cursor walks on in id order', async () => {
      const first = await apiPage('limit=50');
      expect(first.count).toBe(N);
      expect(first.items.map((v) => v.id)).toEqual(Array.from({ length: 50 }, (_, i) => idOf(i)));
      let page = first;
      for (let p = 1; p <= 3; p++) {
        expect(page.cursor).not.toBeNull();
        page = await apiPage(`limit=50&cursor=${encodeURIComponent(page.cursor ?? '')}`);
        expect(page.items.map((v) => v.id)).toEqual(Array.from({ length: 50 }, (_, i) => idOf(p * 50 + i)));
      }
      // The last tenth by id prefix (`digest:user-09` of 100,000).
      const deepFrom = N * 0.9;
      const deep = await apiPage(`limit=500&prefix=${encodeURIComponent(idOf(deepFrom).replace(/0+$/, ''))}`);
      expect(deep.items).toHaveLength(500);
      expect(deep.items[0]?.id).toBe(idOf(deepFrom));
    });

    it('the HTML page renders one page of rows and a Next link to the following one', async () => {
      const page = await (await d.get('/schedules')).text();
      const runtime = page.slice(page.indexOf('id="runtime"'));
      expect(runtime).toContain(`${N} runtime schedules.`);
      expect(runtime.match(/<td class="wrap"><a href="\/schedules\//g)).toHaveLength(50);
      const next = /<a rel="next" href="([^"]+)">/.exec(runtime)?.[1]?.replaceAll('&amp;', '&');
      expect(next).toBeDefined();
      const second = await (await d.get(next ?? '')).text();
      const rows = [...second.matchAll(/<td class="wrap"><a href="\/schedules\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1] ?? ''));
      expect(rows).toEqual(Array.from({ length: 50 }, (_, i) => idOf(50 + i)));
    });
  });
});
