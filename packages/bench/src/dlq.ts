/**
 * `pnpm bench:dlq`: the dead-letter surface with a DLQ after an outage. Fills a private Redis with
 * BENCH_DLQ_ENTRIES (default 1,000,000) entries in BullMQ's layout (pipelined raw writes, as
 * testkit's fillDeadLetters does), starts the real dashboard process against it, and times:
 * - the first, a middle and the last page of `/api/dead-letters` (500 entries) and of the HTML page (50);
 * - filtered pages: by job name, by a reason that matches rarely (a whole 2,000-entry scan window), by time;
 * - one entry's page.
 * One untimed pass over every request warms the dashboard up (a dashboard in use is warm); then each runs
 * BENCH_DLQ_ROUNDS times (default 5) and the slowest counts. Then it reads the dashboard's
 * RSS and peak RSS (VmRSS, VmHWM in /proc/<pid>/status) and prints MET / NOT MET for the targets: every
 * page under 200 ms, the dashboard under 200 MiB.
 *
 * A middle or last page is reached with the cursor a client paging there would hold (built from the
 * entry's index, as the cursor names it), not by paging 2,000 times.
 */
import { performance } from 'node:perf_hooks';
import { fillDeadLetters, filledEntryOf, type FillOptions } from '@tickwork/bullmq-engine/testing';
import { startRedisServer } from '@tickwork/testkit';
import { reportPages, startBenchDashboard, timePages, type BenchDashboard } from './page-timing.js';

const ENTRIES = Number(process.env.BENCH_DLQ_ENTRIES ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_DLQ_ROUNDS ?? 5);
const out = (s: string) => process.stdout.write(s);

/** The cursor of a client that has seen the entries before `index` of a queue's wait list. */
function cursorAt(queue: string, index: number): string {
  return Buffer.from(JSON.stringify({ q: queue, s: 0, o: index })).toString('base64url');
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const client = redis.client();
  const fill: FillOptions = { prefix: 'tw', queue: 'email', count: ENTRIES, jobNames: ['email.send', 'digest.weekly', 'digest.morning'] };
  out(`filling email.dlq with ${ENTRIES} entries... `);
  const t = performance.now();
  await fillDeadLetters(client, fill);
  const mem = /used_memory_human:(\S+)/.exec(await client.info('memory'))?.[1] ?? '?';
  out(`${((performance.now() - t) / 1000).toFixed(1)} s (Redis holds ${mem})\n`);

  let dashboard: BenchDashboard | undefined;
  try {
    dashboard = await startBenchDashboard(redis.url);
    const { base } = dashboard;
    const rare = filledEntryOf(fill, ENTRIES - 1).reason;
    const middle = Math.floor(ENTRIES / 2);
    const since = filledEntryOf(fill, middle).deadLetteredAt;
    const mid = filledEntryOf(fill, middle).dlqJobId;
    const requests: [string, string][] = [
      ['API first page (500)', '/api/dead-letters?limit=500'],
      ['API middle page (500)', `/api/dead-letters?queue=email&limit=500&cursor=${cursorAt('email', middle)}`],
      ['API last page (500)', `/api/dead-letters?queue=email&limit=500&cursor=${cursorAt('email', ENTRIES - 500)}`],
      ['HTML first page (50)', '/dead-letters'],
      ['HTML middle page (50)', `/dead-letters?queue=email&limit=50&cursor=${cursorAt('email', middle)}`],
      ['HTML last page (50)', `/dead-letters?queue=email&limit=50&cursor=${cursorAt('email', ENTRIES - 50)}`],
      ['API filter: job name', '/api/dead-letters?name=digest.weekly&limit=100'],
      ['API filter: rare reason (full window)', `/api/dead-letters?reason=${encodeURIComponent(rare)}`],
      ['API filter: time, mid-queue', `/api/dead-letters?since=${since}&limit=100&cursor=${cursorAt('email', middle)}`],
      ['HTML filter: reason "timeout"', '/dead-letters?reason=timeout'],
      ['HTML one entry', `/dead-letters/email/${encodeURIComponent(mid)}`],
    ];
    reportPages(await timePages(base, dashboard.headers, requests, ROUNDS), dashboard.pid, `${ENTRIES} dead letters`);
  } finally {
    await dashboard?.stop();
    await redis.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:dlq failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
