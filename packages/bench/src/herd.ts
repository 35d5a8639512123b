/**
 * `pnpm bench:herd`: the 09:00 herd (issue 37 §1). N schedules due at the same UTC minute: tickwork's runtime
 * schedules (the stock scheduler and one stock worker) against BullMQ job schedulers (one bare Worker), the
 * same N, worker concurrency and machine, each side on its own private redis-server, one side after the other.
 * Prints, per side, each run's lag from the minute (p50/p95/p99/max), whether every schedule ran exactly
 * once, and where the time went (CPU of the scheduler, the worker and Redis per occurrence, Redis commands per
 * occurrence, when tickwork's scheduler had added every occurrence, how busy each process was while the herd
 * ran: all well below one core means the side waits on round trips, not CPU); then MET / NOT MET against
 * "tickwork's p99 <= half of BullMQ's, every schedule once".
 *
 * Env: BENCH_HERD (N list, default 100000; e.g. 100000,1000000), BENCH_HERD_SIDES (bullmq,tickwork),
 * BENCH_WORKER_CONCURRENCY (50), BENCH_HERD_LEAD_S (how far ahead the minute is put: default 40 + N/2000),
 * BENCH_HERD_DEADLINE_S (600), BENCH_HERD_GRACE_MS (600000: tickwork's SCHEDULE_GRACE_MS, so a slow tail is
 * run rather than judged missed, as BullMQ runs it), BENCH_FILL_PROCESSES (2),
 * BENCH_HERD_MIX=1 (the Redis commands per occurrence by shape, through MONITOR: herd/command-mix.ts),
 * BENCH_HERD_SLOWLOG=1 (Redis's time per occurrence by command shape, from SLOWLOG: herd/command-mix.ts),
 * SCHEDULE_BATCH_MAX (passed to tickwork's scheduler: 1 runs the herd one BullMQ job an occurrence).
 * Progress goes to stderr, the figures to stdout.
 */
import { cpus, loadavg } from 'node:os';
import { cleanupAll, installSignalCleanup, percentile } from './schedules/harness.js';
import { runSide, type Busy, type HerdResult, type HerdSettings } from './herd/run-side.js';

const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((x) => x.trim()).filter(Boolean);
const NS = list(process.env.BENCH_HERD, '100000').map(Number);
const SIDES = list(process.env.BENCH_HERD_SIDES, 'bullmq,tickwork');
const TARGET = 0.5;

function settingsFor(n: number): HerdSettings {
  const lead = process.env.BENCH_HERD_LEAD_S;
  return {
    workerConcurrency: Number(process.env.BENCH_WORKER_CONCURRENCY ?? 50),
    graceMs: Number(process.env.BENCH_HERD_GRACE_MS ?? 600_000),
    deadlineMs: Number(process.env.BENCH_HERD_DEADLINE_S ?? 600) * 1000,
    leadMs: (lead !== undefined ? Number(lead) : 40 + n / 2000) * 1000,
    fillProcesses: Number(process.env.BENCH_FILL_PROCESSES ?? 2),
  };
}

const s1 = (ms: number | null) => (ms === null || !Number.isFinite(ms) ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);
const us = (cpuS: number | null, n: number) => (cpuS === null ? 'n/a' : `${((cpuS * 1e6) / n).toFixed(0)} µs`);

/** How fast runs were recorded while the scheduler was still claiming (from the minute), and after. */
function rates(r: HerdResult): string {
  if (r.addsDoneMs === null || r.ranByAddsDone === null || r.doneMs === null || r.addsDoneMs <= 0) return '';
  const before = r.ranByAddsDone / (r.addsDoneMs / 1000);
  const after = r.doneMs > r.addsDoneMs ? (r.n - r.ranByAddsDone) / ((r.doneMs - r.addsDoneMs) / 1000) : null;
  const perS = (x: number) => `${Math.round(x).toLocaleString('en-US')}/s`;
  return ` (${r.ranByAddsDone.toLocaleString('en-US')} had run by then, ${perS(before)}${after === null ? '' : `; the rest ran at ${perS(after)}`})`;
}

/** How busy each process was while the herd ran (1 core = 100%), and for tickwork while its scheduler claimed and after. */
function busyLine(r: HerdResult): string {
  const pc = (x: number) => `${Math.round(x * 100)}%`;
  const of = (b: Busy) => `worker ${pc(b.worker)}, ${b.scheduler === null ? '' : `scheduler ${pc(b.scheduler)}, `}Redis ${pc(b.redis)}`;
  const phases = r.busyClaiming && r.busyAfter ? `; while the scheduler claimed: ${of(r.busyClaiming)}; after: ${of(r.busyAfter)}` : '';
  return r.busy ? `\n  busy from the minute until every run was recorded (CPU per second, one core = 100%): ${of(r.busy)}${phases}` : '';
}

/** When tickwork's scheduler had claimed (and added) every occurrence: before the minute when it adds ahead. */
function claimedLine(r: HerdResult): string {
  if (r.addsDoneMs !== null && r.addsDoneMs < 0) return `scheduler had claimed and added every occurrence ahead (due entries moved on) ${s1(-r.addsDoneMs)} before the minute`;
  return `scheduler had claimed every occurrence (due entries moved on) ${s1(r.addsDoneMs)} after the minute${rates(r)}`;
}

function line(r: HerdResult): string {
  const ran = r.lags.length;
  const who = r.system === 'tickwork' ? 'tickwork (runtime schedules, 1 scheduler + 1 worker)' : 'BullMQ (job schedulers, 1 bare Worker)';
  return (
    `  ${who}: stored in ${r.storeS.toFixed(1)} s; ${ran.toLocaleString('en-US')} runs: ${r.once.toLocaleString('en-US')} schedules once, ` +
    `${r.twice} more than once, ${r.never} never; lag from the minute p50 ${s1(percentile(r.lags, 0.5))}, p95 ${s1(percentile(r.lags, 0.95))}, ` +
    `p99 ${s1(percentile(r.lags, 0.99))}, max ${s1(r.lags[r.lags.length - 1] ?? null)}; ` +
    `${r.system === 'tickwork' ? `${claimedLine(r)}; ` : ''}` +
    `per occurrence from 2 s before the minute: scheduler CPU ${us(r.cpuS.scheduler, r.n)}, worker CPU ${us(r.cpuS.worker, r.n)}, Redis CPU ${us(r.cpuS.redis, r.n)}, ` +
    `${(r.commands / r.n).toFixed(1)} Redis commands; from the processes' start: scheduler CPU ${us(r.cpuSWhole.scheduler, r.n)}, ` +
    `worker CPU ${us(r.cpuSWhole.worker, r.n)}, Redis CPU ${us(r.cpuSWhole.redis, r.n)}` +
    busyLine(r) +
    `\n  Redis time per occurrence by command (INFO commandstats; EVALSHA's includes its scripts' commands):\n${r.redisTime.join('\n')}` +
    (r.perShape ? `\n  Redis time per occurrence by command shape (SLOWLOG, every command):\n${r.perShape.join('\n')}` : '') +
    (r.mix ? `\n  Redis commands per occurrence by shape (MONITOR on):\n${r.mix.join('\n')}` : '')
  );
}

async function main(): Promise<void> {
  installSignalCleanup();
  if (NS.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('BENCH_HERD must list whole numbers, e.g. 100000,1000000');
  const load0 = loadavg();
  const started = Date.now();
  const out: string[] = [];
  const verdicts: string[] = [];
  for (const n of NS) {
    const results: HerdResult[] = [];
    for (const side of SIDES) results.push(await runSide(side as 'tickwork' | 'bullmq', n, settingsFor(n)));
    out.push(`N=${n.toLocaleString('en-US')} schedules due at the same minute:`, ...results.map(line));
    const tw = results.find((r) => r.system === 'tickwork');
    const bq = results.find((r) => r.system === 'bullmq');
    if (tw && bq) {
      const ratio = percentile(tw.lags, 0.99) / percentile(bq.lags, 0.99);
      const allOnce = tw.once === n && tw.twice === 0 && tw.never === 0;
      verdicts.push(
        `herd N=${n.toLocaleString('en-US')}: p99 <= ${TARGET.toFixed(2)}x BullMQ's, every schedule once: ${ratio <= TARGET && allOnce ? 'MET' : 'NOT MET'} ` +
          `(tickwork p99 ${s1(percentile(tw.lags, 0.99))} = ${ratio.toFixed(2)}x BullMQ's ${s1(percentile(bq.lags, 0.99))}; every schedule once: ${allOnce ? 'yes' : 'no'})`,
      );
    }
  }
  const load1 = loadavg();
  const s = settingsFor(NS[0] ?? 100_000);
  process.stdout.write(
    `tickwork bench:herd: a herd of schedules due at one UTC minute, each side on a private redis-server, one after the other; ` +
      `worker concurrency ${s.workerConcurrency}; tickwork SCHEDULE_GRACE_MS ${s.graceMs}; ${cpus().length} CPUs, Node ${process.versions.node}, ` +
      `load average ${load0[0]?.toFixed(2)} at start, ${load1[0]?.toFixed(2)} at end; ${((Date.now() - started) / 60_000).toFixed(1)} min\n` +
      `${[...out, ...verdicts].join('\n')}\n`,
  );
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:herd failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanupAll();
    process.exit();
  });
