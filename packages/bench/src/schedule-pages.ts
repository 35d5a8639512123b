/**
 * `pnpm bench:schedule-pages`: the dashboard's schedules pages with a million runtime schedules. Stores
 * BENCH_SCHEDULES (default 1,000,000) runtime schedules of the demo catalog through the schedule API
 * (`upsert`, BENCH_UPSERT_CONCURRENCY in flight) in a private Redis: per-user digests
 * (`user:<n>:digest`, job digest.user) and, one in a thousand, tenant clean-ups (`tenant:<n>:cleanup`,
 * job sessions.cleanup, so one job filter is rare). Then it starts the real dashboard process and times
 * the schedules page, a deep page (the cursor a client paging there would hold: the last id before it),
 * searches by id prefix, the job filters (common and rare), the JSON twin and one schedule's page, the
 * slowest of BENCH_PAGE_ROUNDS (default 5) after a warm-up pass, and the pages with charts (the overview, a
 * queue's page, a catalog schedule's page), and reads the dashboard's RSS.
 * Prints MET / NOT MET for issue 12's targets: each page < 200 ms, the dashboard < 200 MiB.
 */
import { performance } from 'node:perf_hooks';
import { catalog } from '@tickwork/jobs';
import { createLogger, QueueSet } from '@tickwork/core';
import { createSchedules } from '@tickwork/schedules';
import { startRedisServer } from '@tickwork/testkit';
import { reportPages, startBenchDashboard, timePages, type BenchDashboard } from './page-timing.js';

const COUNT = Number(process.env.BENCH_SCHEDULES ?? 1_000_000);
const CONCURRENCY = Number(process.env.BENCH_UPSERT_CONCURRENCY ?? 256);
const ROUNDS = Number(process.env.BENCH_PAGE_ROUNDS ?? 5);
const TZS = ['Europe/Lisbon', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'UTC'];
const out = (s: string) => process.stdout.write(s);

const pad = (n: number) => String(n).padStart(7, '0');
/** Schedule i: a per-user digest, or one in a thousand a tenant clean-up. */
function scheduleAt(i: number): { id: string; input: Parameters<ReturnType<typeof createSchedules>['upsert']>[1] } {
  if (i % 1000 === 999) return { id: `tenant:${pad(i)}:cleanup`, input: { job: 'sessions.cleanup', every: { minutes: 30 }, tz: 'UTC' } };
  return { id: `user:${pad(i)}:digest`, input: { job: 'digest.user', pattern: `${i % 60} 9 * * *`, tz: TZS[i % TZS.length] as string, data: { userId: `u${i}` } } };
}

async function fill(url: string): Promise<void> {
  const { createRedis } = await import('@tickwork/core');
  const redis = createRedis(url, 'command');
  const queues = new QueueSet(redis, 'tw', createLogger('bench', 'silent'));
  const api = createSchedules({ redis, queues, catalog });
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < COUNT; i = next++) {
        const { id, input } = scheduleAt(i);
        await api.upsert(id, input);
        if (i % 100_000 === 99_999) process.stderr.write(`  ${i + 1} stored, ${((i + 1) / ((performance.now() - t) / 1000)).toFixed(0)}/s\n`);
      }
    }),
  );
  if ((await api.count({ source: 'runtime' })) !== COUNT) throw new Error('the store does not hold every schedule');
  await queues.close();
  redis.disconnect();
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const client = redis.client();
  out(`storing ${COUNT} runtime schedules through upsert (${CONCURRENCY} in flight)... `);
  const t = performance.now();
  await fill(redis.url);
  const mem = /used_memory_human:(\S+)/.exec(await client.info('memory'))?.[1] ?? '?';
  out(`${((performance.now() - t) / 1000).toFixed(1)} s (Redis holds ${mem})\n`);

  let dashboard: BenchDashboard | undefined;
  try {
    dashboard = await startBenchDashboard(redis.url);
    const { base } = dashboard;
    const middle = scheduleAt(Math.floor(COUNT / 2)).id;
    const late = scheduleAt(COUNT - 60).id;
    const requests: [string, string][] = [
      ['HTML schedules page (catalog + 50 runtime)', '/schedules'],
      ['HTML middle page (50)', `/schedules?cursor=${encodeURIComponent(middle)}`],
      ['HTML last pages (50)', `/schedules?cursor=${encodeURIComponent(late)}`],
      ['HTML prefix search (one user)', `/schedules?prefix=${encodeURIComponent(scheduleAt(COUNT - 2).id)}`],
      ['HTML prefix search (1,000 users)', `/schedules?prefix=${encodeURIComponent('user:0123')}`],
      ['HTML job filter: digest.user (common)', '/schedules?job=digest.user'],
      ['HTML job filter: sessions.cleanup (rare)', '/schedules?job=sessions.cleanup'],
      ['API first page (500)', '/api/runtime-schedules?limit=500'],
      ['API middle page (500), job filter', `/api/runtime-schedules?limit=500&job=digest.user&cursor=${encodeURIComponent(middle)}`],
      ['HTML one schedule', `/schedules/${encodeURIComponent(middle)}`],
      ['HTML overview with charts (24 h)', '/overview?range=24h'],
      ['HTML overview with charts (30 d)', '/overview?range=30d'],
      ['HTML queue page with charts (email, 24 h)', '/queue/email?range=24h'],
      ['HTML catalog schedule with charts', '/schedules/digest.morning'],
    ];
    reportPages(await timePages(base, dashboard.headers, requests, ROUNDS), dashboard.pid, `${COUNT} runtime schedules`);
  } finally {
    await dashboard?.stop();
    await redis.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:schedule-pages failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
