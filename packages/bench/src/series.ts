/**
 * One series of `pnpm bench` (main.ts): every mode drains the same number of jobs once per round, the order
 * rotating from round to round, after an uncounted warm-up round; ratios are per round against the first mode.
 */
import type { Measured, ProcessorFor, WorkerMaker } from './measure.js';
import { measure, median } from './measure.js';

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);

export interface Series {
  title: string;
  concurrency: number;
  jobs: number;
  /** The first mode is the baseline the others are held against. */
  modes: Record<string, Mode>;
}
/** A BullMQ Worker with `processor` drains jobs named `job` (measure.ts), or a mode drains its own queue its own way (`drain`). */
export type Mode = { job: string; processor: ProcessorFor; after?: (jobs: number) => Promise<void>; maker?: WorkerMaker } | { drain: (jobs: number) => Promise<PeerMeasured> };
/** A drain of its own (a peer, or tickwork's batch jobs); a peer's gives its server's CPU (PostgreSQL's) in place of Redis's. */
export type PeerMeasured = Measured & { postgresUs?: number };
export interface SeriesResult {
  rates: Record<string, number[]>;
  /** Per mode: its jobs/s over the baseline's, per round. */
  ratios: Record<string, number[]>;
  commands: Record<string, number[]>;
  /** Per mode: the CPU a job cost in all, per round: Node's and its server's (Redis, or PostgreSQL for pg-boss), where known. */
  cpu: Record<string, number[]>;
}


/** Runs every mode of `s` once per round (plus a warm-up), printing each measurement. */
export async function runSeries(url: string, s: Series, nextQueue: () => string, ledgerSent: { batches: number; ops: number }): Promise<SeriesResult> {
  const names = Object.keys(s.modes);
  const out: SeriesResult = { rates: {}, ratios: {}, commands: {}, cpu: {} };
  for (let r = 0; r <= ROUNDS; r++) {
    const warmUp = r === 0;
    const jobs = warmUp ? Math.max(Math.floor(s.jobs / 5), 200) : s.jobs;
    const round: Record<string, number> = {};
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + r) % names.length] as string;
      const mode = s.modes[name] as Series['modes'][string];
      let m: Measured & { postgresUs?: number };
      if ('drain' in mode) m = await mode.drain(jobs);
      else {
        m = await measure(url, nextQueue(), mode.job, mode.processor, jobs, s.concurrency, ledgerSent, mode.maker);
        await mode.after?.(jobs);
      }
      round[name] = m.rate;
      process.stdout.write(
        `  ${warmUp ? 'warm-up' : `round ${r}`.padEnd(7)} ${name.padEnd(16)} ${m.rate.toFixed(0).padStart(6)} jobs/s` +
          `   cpu per job: node ${m.nodeUs.toFixed(0).padStart(3)} us` +
          (Number.isNaN(m.redisUs) ? '' : `, redis ${m.redisUs.toFixed(0).padStart(3)} us   requests per job ${m.commandsPerJob.toFixed(2)}`) +
          (m.postgresUs === undefined || Number.isNaN(m.postgresUs) ? '' : `, postgres ${m.postgresUs.toFixed(0).padStart(3)} us`) +
          `${m.completionsPerCall === undefined ? '' : `   results per write-ahead call: ${m.completionsPerCall.toFixed(1)}`}\n`,
      );
      if (!warmUp) {
        (out.commands[name] ??= []).push(m.commandsPerJob);
        (out.cpu[name] ??= []).push(m.nodeUs + (m.postgresUs ?? m.redisUs));
      }
    }
    if (warmUp) continue;
    for (const name of names) {
      (out.rates[name] ??= []).push(round[name] as number);
      (out.ratios[name] ??= []).push((round[name] as number) / (round[names[0] as string] as number));
    }
  }
  for (const name of names) {
    const rates = out.rates[name] ?? [];
    process.stdout.write(
      `  ${name.padEnd(16)} best ${Math.max(...rates).toFixed(0).padStart(6)}  median ${median(rates).toFixed(0).padStart(6)} jobs/s` +
        `  ${median(out.ratios[name] ?? []).toFixed(2)}x ${names[0]} [${(out.ratios[name] ?? []).map((x) => x.toFixed(2)).join(' ')}]\n`,
    );
  }
  return out;
}
