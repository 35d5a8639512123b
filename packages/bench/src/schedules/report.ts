/** The one table `pnpm bench:schedules` prints (stdout), its notes, and the verdicts against issue 10's targets. */
import type { SideResult } from './side.js';
import type { Spread } from './spread.js';

const P99_MS = 100;
const COST_GROWTH = 1.2;
const BYTES_RATIO = 0.5;
const UPSERTS_PER_S = 10_000;
const BIG = 1_000_000;
const SMALL = 10_000;

const f = (x: number | null | undefined, digits = 0) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits));

export function printReport(results: SideResult[], spreads: Map<number, Spread>, header: string): void {
  const cols: [string, number][] = [
    ['system', 8], ['N', 9], ['sched procs', 11], ['upserts/s', 9], ['B/sched rest', 12], ['B/sched firing', 14], ['start ms', 8],
    ['occ/s', 6], ['ran/due', 13], ['lag p50', 7], ['p99', 6], ['max', 6], ['cmds/occ', 8], ['redis us/occ', 12], ['sched us/occ', 12], ['worker us/occ', 13],
  ];
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(cols[i]?.[1] ?? 0)).join('  ') + '\n';
  let out = `\n${header}\n\n` + line(cols.map(([c]) => c));
  for (const r of results) {
    for (const row of r.rows) {
      const fire = row.fire;
      out += line([
        r.system,
        String(r.n),
        row.replicas === null ? 'none*' : String(row.replicas),
        f(r.upsertsPerS) + (r.upsertNote ? '+' : ''),
        f(r.bytesPerSchedule),
        f(fire.firingBytesPerSchedule),
        row.startMs === null ? 'n/a' : f(row.startMs),
        f(fire.ran / fire.seconds),
        `${fire.ran}/${f(fire.due)}`,
        f(fire.lag.p50),
        f(fire.lag.p99),
        f(fire.lag.max),
        f(fire.commandsPerOcc, 1),
        f(fire.redisCpuUsPerOcc),
        row.replicas === null ? 'n/a*' : f(fire.schedulerCpuUsPerOcc),
        f(fire.workerCpuUsPerOcc),
      ]);
    }
  }
  out += '\n';
  for (const [n, s] of spreads) out += `N=${n}: ${s.describe} (${f(s.rate)} occurrences due per second)\n`;
  for (const r of results) if (r.upsertNote) out += `+ ${r.system} N=${r.n}: ${r.upsertNote}\n`;
  out += `${NOTES}\n\n${verdicts(results)}`;
  process.stdout.write(out);
}

const NOTES = `* BullMQ has no scheduler process: its Worker adds each job scheduler's next job as it takes the current one,
  so its "start" is n/a and the CPU that schedules is inside the worker column (which also runs the job).
upserts/s: N upserts from one process, BENCH_UPSERT_CONCURRENCY in flight. B/sched rest: Redis used_memory after
the upserts (settled) less before, / N; "firing": at the end of the window less the same baseline, / N.
start ms: scheduler process spawn until its /readyz answers 200 (the slowest replica; includes Node start-up
and the first tick's catch-up: for the first replica count, of every occurrence due since the upserts, when no
scheduler ran; for the next, of those due while the previous replicas stopped).
lag: handler start - the occurrence's nominal time, ms, for occurrences due in the window; ran/due: those that
started / those the spread makes due in the window. cmds/occ: Redis total_commands_processed over the window
(commands inside Lua scripts included) / occurrences run; redis/sched/worker us/occ: CPU time of the
redis-server / of every scheduler process / of every worker process over the window, / occurrences run.`;

function verdicts(results: SideResult[]): string {
  const tw = results.filter((r) => r.system === 'tickwork');
  const bull = (n: number) => results.find((r) => r.system === 'bullmq' && r.n === n);
  const v = (ok: boolean) => (ok ? 'MET' : 'NOT MET');
  let out = 'Targets (issue 10):\n';

  const big = tw.find((r) => r.n === BIG);
  if (!big) out += `  p99 fire lag <= ${P99_MS} ms at 1,000 occurrences/s with 1,000,000 schedules: not measured (N=1000000 not in BENCH_SCHEDULES)\n`;
  for (const row of big?.rows ?? []) {
    out += `  p99 fire lag <= ${P99_MS} ms at 1,000 occurrences/s with 1,000,000 schedules, ${row.replicas} scheduler(s): ` +
      `${f(row.fire.lag.p99)} ms  ${v(row.fire.lag.p99 <= P99_MS && row.fire.ran >= 0.99 * row.fire.due)}\n`;
  }

  const small = tw.find((r) => r.n === SMALL);
  if (!big || !small) out += `  cost per occurrence at 1,000,000 within ${COST_GROWTH}x of 10,000: not measured (needs N=10000 and N=1000000)\n`;
  for (const row of big?.rows ?? []) {
    const base = small?.rows.find((r) => r.replicas === row.replicas);
    if (!base) continue;
    const cmds = row.fire.commandsPerOcc / base.fire.commandsPerOcc;
    const cpu = (row.fire.schedulerCpuUsPerOcc ?? NaN) / (base.fire.schedulerCpuUsPerOcc ?? NaN);
    const redisCpu = row.fire.redisCpuUsPerOcc / base.fire.redisCpuUsPerOcc;
    out += `  cost per occurrence at 1,000,000 within ${COST_GROWTH}x of 10,000, ${row.replicas} scheduler(s): commands ${f(cmds, 2)}x, ` +
      `scheduler CPU ${f(cpu, 2)}x (Redis CPU ${f(redisCpu, 2)}x, not judged)  ${v(cmds <= COST_GROWTH && cpu <= COST_GROWTH)}\n`;
  }

  for (const r of tw) {
    const b = bull(r.n);
    out += b
      ? `  bytes per schedule at rest <= half of BullMQ's, N=${r.n}: ${f(r.bytesPerSchedule)} vs ${f(b.bytesPerSchedule)} (${f(r.bytesPerSchedule / b.bytesPerSchedule, 2)}x)  ` +
        `${v(r.bytesPerSchedule <= BYTES_RATIO * b.bytesPerSchedule)}\n`
      : `  bytes per schedule at rest <= half of BullMQ's, N=${r.n}: BullMQ not measured at this N (BENCH_BULLMQ_MAX, BENCH_SIDES)\n`;
  }
  for (const r of tw) {
    out += `  upserts >= ${UPSERTS_PER_S}/s, N=${r.n}: ${f(r.upsertsPerS)}/s${r.upsertNote ? ' (timed part only, see +)' : ''}  ${v(r.upsertsPerS >= UPSERTS_PER_S)}\n`;
  }
  if (tw.length === 0) out += '  (no tickwork results: the targets are judged on tickwork rows only)\n';
  return out;
}
