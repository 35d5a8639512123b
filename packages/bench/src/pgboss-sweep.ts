/**
 * `pnpm bench:pgboss`: how the peer row's pg-boss settings were chosen (pgboss.ts). Drains the bench's
 * 10,000-job rounds (BENCH_JOBS) through pg-boss at several worker counts and batch sizes, BENCH_ROUNDS
 * rounds each (default 7) after a warm-up, and prints each setting's rounds and median, fastest first.
 * A round ends when pg-boss has completed every job, and each round's partition is analyzed before it is
 * timed (pgboss.ts). pg-boss's rate varies between rounds on this machine (settings that fetch a round's
 * jobs in several polls by up to 3x: a round ends one poll sooner or later), so settings within about 20% of
 * each other are alike; run it twice before choosing. BENCH_PGBOSS_SETTINGS overrides the list
 * ("workersxbatch,...", e.g. "10x500,10x1000").
 */
import { median } from './measure.js';
import { openPgBossBench } from './pgboss.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SETTINGS = (process.env.BENCH_PGBOSS_SETTINGS ?? '10x250,20x500,10x1000,5x2000,4x2500,2x5000,1x10000').split(',');

async function main(): Promise<void> {
  const results: { setting: string; median: number; rates: number[] }[] = [];
  for (const setting of SETTINGS) {
    const [workers, batch] = setting.split('x').map(Number);
    if (!Number.isInteger(workers) || !Number.isInteger(batch) || !workers || !batch) throw new Error(`BENCH_PGBOSS_SETTINGS: "${setting}" is not <workers>x<batch>`);
    const bench = await openPgBossBench(workers, batch);
    if (typeof bench === 'string') {
      process.stdout.write(`pg-boss sweep skipped: ${bench}\n`);
      return;
    }
    await bench.measure(Math.floor(JOBS / 5)); // warm-up
    const rates: number[] = [];
    for (let r = 0; r < ROUNDS; r++) rates.push((await bench.measure(JOBS)).rate);
    await bench.close();
    results.push({ setting: bench.settings, median: median(rates), rates });
    process.stdout.write(`${bench.settings}: median ${median(rates).toFixed(0)} jobs/s [${rates.map((r) => r.toFixed(0)).join(' ')}]\n`);
  }
  process.stdout.write(`\nfastest first (${JOBS} jobs per round):\n`);
  for (const r of results.sort((a, b) => b.median - a.median)) process.stdout.write(`  ${r.median.toFixed(0).padStart(6)} jobs/s  ${r.setting}\n`);
}

main().then(
  () => process.exit(0), // pg-boss leaves a timer behind after stop()
  (err: unknown) => {
    process.stderr.write(`pg-boss sweep failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
