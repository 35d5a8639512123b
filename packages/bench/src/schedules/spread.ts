/**
 * How N schedules are spread so that about 1,000 occurrences fall due each second, the same way on both
 * sides. Both tickwork's and BullMQ's `every` are anchored to the epoch: N schedules of `every: P` with
 * nothing else would all fall due at the same instant once per P. So each schedule gets a phase:
 *
 * - `periods` (the default): tickwork's `every` takes no phase (ScheduleInput has no offset), so instead
 *   each schedule gets an interval of its own, schedule i every ln2·N·(1 + i/N) ms (0.69 to 1.39 times N/1,000
 *   s), on both sides. The sum of their rates is 1,000 a second (∫ dx/(ln2·(1+x)) over [0,1) = 1), and their
 *   epoch-aligned instants fall across the milliseconds much as random ones would (per second 880 to 1,150
 *   due; a few ms where many intervals divide the time hold up to about a hundred). `dueIn` counts them
 *   exactly. Both sides stay on `every`, the cheap path: what is measured is scheduling, not cron.
 * - `seconds`: cron patterns with a seconds field, the same on both sides. Cron can only repeat on periods that divide a minute, an hour or a day, so the period is the one
 *   of those nearest N/1,000 s (e.g. 120 s for N = 100,000: 833 a second) and each second of it gets N/P
 *   schedules, all due at the same instant: bursts once a second, not one occurrence per millisecond. The
 *   table prints the rate this gives.
 * - `ms` (BullMQ alone, BENCH_SIDES=bullmq, until tickwork's `every` takes a phase): every schedule repeats
 *   every N ms (1,000 a second over N schedules), schedule i at i ms past each multiple of N (BullMQ's
 *   `offset`): one occurrence per millisecond, no bursts.
 */
export type SpreadMode = 'periods' | 'seconds' | 'ms';

export interface Spread {
  mode: SpreadMode;
  periodMs: number;
  /** Occurrences due per second. */
  rate: number;
  describe: string;
  /** BullMQ job scheduler repeat options of schedule i (offset > 0: BullMQ treats 0 as "now"). */
  bullmq(i: number): { every: number; offset: number } | { pattern: string };
  /** tickwork schedule timing of schedule i. */
  tickwork(i: number): { every: { milliseconds: number }; offsetMs?: number } | { pattern: string };
  /** Occurrences due in [fromMs, toMs). */
  dueIn(fromMs: number, toMs: number): number;
}

/** Periods (s) a cron pattern with a seconds field repeats on exactly, up to an hour. */
const CRON_PERIODS_S = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60, 120, 180, 240, 300, 360, 600, 720, 900, 1200, 1800, 3600];

export function spreadFor(n: number, mode: SpreadMode): Spread {
  if (mode === 'periods') {
    const period = (i: number) => Math.round(Math.LN2 * n * (1 + i / n));
    return {
      mode,
      periodMs: n,
      rate: 1000,
      describe: `every ${((Math.LN2 * n) / 1000).toFixed(1)}-${((2 * Math.LN2 * n) / 1000).toFixed(1)} s, a period of its own per schedule`,
      // Offset = the period itself: BullMQ then aligns to the epoch as tickwork does (offset 0 means "now").
      bullmq: (i) => ({ every: period(i), offset: period(i) }),
      tickwork: (i) => ({ every: { milliseconds: period(i) } }),
      dueIn: (from, to) => {
        let due = 0;
        for (let i = 0; i < n; i++) {
          const p = period(i);
          due += Math.floor((to - 1) / p) - Math.floor((from - 1) / p);
        }
        return due;
      },
    };
  }
  if (mode === 'ms') {
    return {
      mode,
      periodMs: n,
      rate: 1000,
      describe: `every ${n / 1000} s, one occurrence per ms`,
      bullmq: (i) => ({ every: n, offset: i === 0 ? n : i }),
      tickwork: (i) => ({ every: { milliseconds: n }, offsetMs: i }),
      dueIn: (from, to) => countPhases(n, n, from, to),
    };
  }
  const wanted = n / 1000;
  const periodS = CRON_PERIODS_S.reduce((best, p) => (Math.abs(Math.log(p / wanted)) < Math.abs(Math.log(best / wanted)) ? p : best));
  const pattern = (i: number) => cronAt(i % periodS, periodS);
  return {
    mode,
    periodMs: periodS * 1000,
    rate: n / periodS,
    describe: `cron every ${periodS} s, ${Math.round(n / periodS)} due together each second`,
    bullmq: (i) => ({ pattern: pattern(i) }),
    tickwork: (i) => ({ pattern: pattern(i) }),
    dueIn: (from, to) => (n * (to - from)) / (periodS * 1000),
  };
}

/** A 6-field cron pattern firing at second `slot` of every `periodS`-second period (UTC). */
function cronAt(slot: number, periodS: number): string {
  if (periodS <= 60) return `${slot}/${periodS} * * * * *`;
  const minutes = periodS / 60;
  return `${slot % 60} ${Math.floor(slot / 60)}/${minutes} * * * *`;
}

/** Occurrences in [from, to) of n schedules with period `period` ms and phases 0..n-1 ms. */
function countPhases(n: number, period: number, from: number, to: number): number {
  // Phases are one per ms over the whole period: each ms of the window holds exactly one.
  return n === period ? to - from : (n * (to - from)) / period;
}
