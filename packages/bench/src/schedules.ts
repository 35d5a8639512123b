/**
 * `pnpm bench:schedules`: runtime schedules (issue 10) against BullMQ job schedulers, same N, same machine,
 * each side on its own private redis-server, printed side by side in one table with MET / NOT MET verdicts.
 *
 * For each N: N upserts from this process (upserts/s), Redis bytes per schedule at rest, then the schedules
 * fire at about 1,000 occurrences a second (spread.ts) into worker processes whose no-op job records its
 * fire lag in memory (lag-recorder.ts). tickwork runs the stock scheduler (1 and 3 replicas, timed from
 * spawn to /readyz) and the stock worker on a bench catalog (schedules/catalog.ts); BullMQ a bare Worker.
 * Over BENCH_FIRE_SECONDS of firing it counts fire lag, Redis commands and CPU, and process CPU.
 *
 * Env: BENCH_SCHEDULES (default 10000,100000,1000000), BENCH_FIRE_SECONDS (60), BENCH_REPLICAS (1,3),
 * BENCH_BULLMQ_MAX (100000: larger N run tickwork only), BENCH_WARMUP_SECONDS (15: firing before the window),
 * BENCH_UPSERT_CONCURRENCY (128), BENCH_WORKER_CONCURRENCY (50), BENCH_WORKERS (1 worker process),
 * BENCH_SPREAD (periods, seconds, or ms for BullMQ alone; see spread.ts), BENCH_SIDES (tickwork,bullmq),
 * BENCH_UPSERTS_TIMED (100000: tickwork upserts beyond these go through BENCH_FILL_PROCESSES (2) processes
 * at once, said in the output).
 * Progress goes to stderr, the table to stdout.
 */
import { cpus, loadavg } from 'node:os';
import { runBullmq } from './schedules/bullmq-side.js';
import { cleanupAll, installSignalCleanup } from './schedules/harness.js';
import { printReport } from './schedules/report.js';
import type { BenchSettings, SideResult } from './schedules/side.js';
import { spreadFor, type Spread, type SpreadMode } from './schedules/spread.js';
import { runTickwork } from './schedules/tickwork-side.js';

const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((x) => x.trim()).filter(Boolean);
const NS = list(process.env.BENCH_SCHEDULES, '10000,100000,1000000').map(Number);
const REPLICAS = list(process.env.BENCH_REPLICAS, '1,3').map(Number);
const BULLMQ_MAX = Number(process.env.BENCH_BULLMQ_MAX ?? 100_000);
const SIDES = list(process.env.BENCH_SIDES, 'tickwork,bullmq');
const SPREAD = (process.env.BENCH_SPREAD ?? 'periods') as SpreadMode;
const settings: BenchSettings = {
  fireSeconds: Number(process.env.BENCH_FIRE_SECONDS ?? 60),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 15),
  concurrency: Number(process.env.BENCH_UPSERT_CONCURRENCY ?? 128),
  workerConcurrency: Number(process.env.BENCH_WORKER_CONCURRENCY ?? 50),
  workers: Number(process.env.BENCH_WORKERS ?? 1),
  timedUpserts: Number(process.env.BENCH_UPSERTS_TIMED ?? 100_000),
  fillProcesses: Number(process.env.BENCH_FILL_PROCESSES ?? 2),
};

async function main(): Promise<void> {
  installSignalCleanup();
  if (!['periods', 'seconds', 'ms'].includes(SPREAD)) throw new Error(`BENCH_SPREAD must be periods, seconds or ms, not ${SPREAD}`);
  if (SPREAD === 'ms' && SIDES.includes('tickwork')) {
    throw new Error("BENCH_SPREAD=ms needs a phase for tickwork's every, which it does not take: use it with BENCH_SIDES=bullmq");
  }
  if (NS.some((n) => !Number.isInteger(n) || n < 1000) || REPLICAS.some((r) => !Number.isInteger(r) || r < 1)) {
    throw new Error('BENCH_SCHEDULES must list integers >= 1000 (a period of at least 1 s); BENCH_REPLICAS integers >= 1');
  }
  const load0 = loadavg();
  const started = Date.now();
  const results: SideResult[] = [];
  const spreads = new Map<number, Spread>();
  for (const n of NS) {
    const spread = spreadFor(n, SPREAD);
    spreads.set(n, spread);
    if (SIDES.includes('bullmq') && n <= BULLMQ_MAX) results.push(await runBullmq(n, spread, settings));
    if (SIDES.includes('tickwork')) results.push(await runTickwork(n, spread, REPLICAS, settings));
  }
  const load1 = loadavg();
  const header =
    `tickwork bench:schedules: runtime schedules vs BullMQ job schedulers (bullmq 6.7.0), private redis-server per side; ` +
    `${cpus().length} CPUs, load average ${load0[0]?.toFixed(2)} at start, ${load1[0]?.toFixed(2)} at end; ` +
    `${settings.fireSeconds} s of firing after ${settings.warmupSeconds} s of warm-up, ${settings.workers} worker process(es) at concurrency ` +
    `${settings.workerConcurrency}, upserts ${settings.concurrency} in flight; BullMQ up to N=${BULLMQ_MAX}; ` +
    `${((Date.now() - started) / 60_000).toFixed(1)} min`;
  printReport(results, spreads, header);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:schedules failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanupAll();
    process.exit();
  });
