/**
 * The targets `pnpm bench` holds tickwork to, with their verdicts (MET / NOT MET), and beside each the
 * figure of BullMQ's public paths (the worker's engine when the installed BullMQ does not match its
 * contract: every guarantee holds there, more slowly, so that figure has no target of its own).
 */
import { median } from './measure.js';
import type { SeriesResult } from './series.js';

const NOOP_GOAL = 0.9;
const WRITE_GOAL = 0.8;
const EXTRA_COMMANDS_GOAL = 1;
const PEER_GOAL = 2;

/** Target 1's line for one no-op series (its tickwork and public modes against bare). */
export function noopTargetLine(r: SeriesResult, concurrency: number): string {
  const ratio = median(r.ratios.tickwork ?? []);
  return (
    `  1. no-op job, every feature on, concurrency ${concurrency}: ${shown(ratio, NOOP_GOAL)}x bare jobs/s (target >= ${NOOP_GOAL.toFixed(2)}x): ` +
    `${ratio >= NOOP_GOAL ? 'MET' : 'NOT MET'}; BullMQ's public paths only: ${median(r.ratios.public ?? []).toFixed(2)}x bare\n`
  );
}

/** Targets 1 and 2 (and the floor and ledger lines before them), from the three series of one run. */
export function targetsReport(r: { c50: SeriesResult; c1: SeriesResult; write: SeriesResult; concurrency: number; ledgerSent: { batches: number; ops: number } }): string {
  const { c50, c1, write } = r;
  const CONCURRENCY = r.concurrency;
  const ratio = (r: SeriesResult, mode: string) => median(r.ratios[mode] ?? []);
  // Judged as printed (two decimals): requests per job carry a few per round that are not the jobs' (queue
  // setup), so 3.01 - 2.01 came out as 1.0000000000000004 and failed a target of 1 it met.
  const extra = (r: SeriesResult, mode: string) => Math.round((median(r.commands[mode] ?? []) - median(r.commands.bare ?? [])) * 100) / 100;
  const verdict = (ok: boolean) => (ok ? 'MET' : 'NOT MET');
  // The public paths' figure beside each target: what the worker runs at when the installed BullMQ does not
  // match the engine's contract (no target of its own: every guarantee holds there, more slowly).
  const publicOf = (r: SeriesResult, mode: string) => `; BullMQ's public paths only: ${ratio(r, mode).toFixed(2)}x bare`;
  const writeLine = (mode: 'redisStep' | 'step') =>
    `  2. one ctx.${mode} writing one key, concurrency ${CONCURRENCY}: ${shown(ratio(write, mode), WRITE_GOAL)}x bare jobs/s (target >= ${WRITE_GOAL.toFixed(2)}x), ` +
    `${extra(write, mode).toFixed(2)} extra requests to Redis per job, awaited or not (target <= ${EXTRA_COMMANDS_GOAL}): ${verdict(ratio(write, mode) >= WRITE_GOAL && extra(write, mode) <= EXTRA_COMMANDS_GOAL)}` +
    `${publicOf(write, `${mode} public`)} (${extra(write, `${mode} public`).toFixed(2)} extra requests)\n`;
  return (
    `\nfloor (one awaited round trip per job): ${ratio(c50, 'floor').toFixed(2)}x bare; ledger alone: ${ratio(c50, 'ledger').toFixed(2)}x bare` +
      ` (${(ratio(c50, 'ledger') / ratio(c50, 'floor')).toFixed(2)}x the floor); ledger calls per batch: ` +
      `${(r.ledgerSent.ops / Math.max(r.ledgerSent.batches, 1)).toFixed(1)}\n` +
      `\ntargets (issue 13), medians of paired rounds in this run:\n` +
      noopTargetLine(c50, CONCURRENCY) +
      noopTargetLine(c1, 1) +
      writeLine('redisStep') +
      writeLine('step')
  );
}

/**
 * Target 5: tickwork (every feature on) against pg-boss, each round's tickwork rate over the same round's
 * pg-boss rate (both drained in the concurrency-50 series, in rotating order), median over the rounds.
 */
export function peerLine(c50: SeriesResult, settings: string, batch: { size: number; concurrency: number }): string {
  const pb = c50.rates['pg-boss'] ?? [];
  const against = (mode: string) => {
    const perRound = (c50.rates[mode] ?? []).map((t, i) => t / (pb[i] as number));
    return { perRound, ratio: median(perRound) };
  };
  const { perRound, ratio } = against('tickwork');
  const batched = against('batch');
  // What a job cost the machine in all (the process's CPU and its server's), beside the throughput ratio:
  // pg-boss's work is mostly PostgreSQL's, spread over its backends, tickwork's is its one Node process's and Redis's.
  const pgCpu = median(c50.cpu['pg-boss'] ?? []);
  const cpuLine = Number.isNaN(pgCpu)
    ? ''
    : `     CPU per job in all, medians: tickwork one at a time ${median(c50.cpu.tickwork ?? []).toFixed(0)} us and batch jobs ${median(c50.cpu.batch ?? []).toFixed(0)} us (Node and Redis), pg-boss ${pgCpu.toFixed(0)} us (Node and PostgreSQL)\n`;
  return (
    `  5. tickwork (every feature on) against pg-boss (${settings}), paired rounds: pg-boss median ${median(pb).toFixed(0)} jobs/s\n` +
    `     batch jobs (defineBatchJob, batches of ${batch.size} x ${batch.concurrency}, as pg-boss takes them): ${batched.ratio.toFixed(2)}x pg-boss ` +
    `[${batched.perRound.map((x) => x.toFixed(2)).join(' ')}] (target >= ${PEER_GOAL.toFixed(1)}x): ${batched.ratio >= PEER_GOAL ? 'MET' : 'NOT MET'}` +
    `; BullMQ's public paths only: ${against('batch public').ratio.toFixed(2)}x pg-boss\n` +
    `     one job at a time (defineJob): ${ratio.toFixed(2)}x pg-boss [${perRound.map((x) => x.toFixed(2)).join(' ')}] (target >= ${PEER_GOAL.toFixed(1)}x): ${ratio >= PEER_GOAL ? 'MET' : 'NOT MET'}` +
    `; BullMQ's public paths only: ${against('public').ratio.toFixed(2)}x pg-boss\n` +
    cpuLine
  );
}

/** A ratio to two decimals, or three where two would round it up to a target it misses (0.797 is not 0.80). */
function shown(ratio: number, goal: number): string {
  const two = ratio.toFixed(2);
  return ratio < goal && Number(two) >= goal ? ratio.toFixed(3) : two;
}
