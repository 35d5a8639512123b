import type { Catalog, Enqueue, Logger } from '@tickwork/core';
import type { ExactlyOnce } from '@tickwork/exactly-once';
import type { Job } from 'bullmq';
import type { RedisClient } from '@tickwork/core';
import type { CancelListener } from './cancel-listener.js';
import type { RunningJobs } from './running-jobs.js';
import type { StallProgress } from './stall-progress.js';
import { JobRun } from './pipeline/job-run.js';
import { compose, type Next } from './pipeline/stage.js';
import { identify, validate } from './pipeline/stages/admit.js';
import { cancelGate } from './pipeline/stages/cancel-gate.js';
import { claim } from './pipeline/stages/claim.js';
import { execute } from './pipeline/stages/execute.js';
import { judgeLate, onTime, overlapPolicy, scheduleGate } from './pipeline/stages/scheduled.js';

export interface ProcessorDeps {
  catalog: Catalog;
  redis: RedisClient;
  enqueue: Enqueue;
  log: Logger;
  /** Idempotency ledger, overlap guard and locks. */
  exactlyOnce: ExactlyOnce;
  /**
   * The connection BullMQ acknowledges jobs of `queue` on (the Worker's own): the ledger writes each
   * result there ahead of the acknowledgement (see CompletionWriter). Without it, results are awaited on
   * the ledger's connection.
   */
  ackConnectionOf?: (queue: string) => Promise<RedisClient> | undefined;
  /** SCHEDULE_GRACE_MS: an occurrence starting later than this after its time is judged by its missed-run policy. */
  graceMs?: number;
  /** Operators' cancel requests (cancel-listener.ts); without it jobs cannot be cancelled. */
  cancels?: CancelListener;
  /** The running jobs, for cancels and shutdown to abort (running-jobs.ts); without it nothing aborts a run from outside. */
  running?: RunningJobs;
  /**
   * Whether a job's delivery is provably its only one (recovery/sole-delivery.ts): then a `ctx.step` on its
   * first delivery runs without claiming the run first, the claim riding with the step's record. Without it,
   * such a step claims first.
   */
  soleDelivery?: (job: Job) => boolean;
  /**
   * Stalls and progress (stall-progress.ts): a step recorded after a stall starts the job's stall count
   * again, and on BullMQ's public paths a job stalled too often without progress fails. Without it stalls
   * are counted as BullMQ counts them.
   */
  stallProgress?: StallProgress;
  /** WORKER_MAX_STALLED_COUNT, for the reason a job stalled too often fails with (default 2). */
  maxStalledCount?: number;
}

/** The result a late occurrence dropped by its missed-run policy completes with (also in the ledger). */
export interface MissedRunResult {
  skipped: 'missed';
  reason: string;
}

/**
 * A job's way through the worker, stage by stage (pipeline/stages):
 *
 *   validate → identify → cancelGate → [judgeLate → overlapPolicy → onTime →] claim → [scheduleGate →] execute
 *
 * The bracketed stages are for runs of scheduled jobs only; every other job skips them entirely. claim
 * frames the stages after it: it records their result (or gives the run back) when they end.
 */
const onDemand = compose([cancelGate, claim, execute]);
const scheduled = compose([cancelGate, judgeLate, overlapPolicy, onTime, claim, scheduleGate, execute]);

/**
 * The BullMQ processor. It takes two parameters, not BullMQ's third (a signal): BullMQ makes an
 * AbortController per job only for a processor that declares one, and aborts go through RunningJobs
 * instead (running-jobs.ts). Not async: validate and identify throw synchronously, which BullMQ catches
 * like a rejection, and a job start costs no promise of its own.
 */
export function createProcessor(deps: ProcessorDeps): (job: Job, token?: string) => Promise<unknown> {
  const running = deps.running;
  return (job, token) => {
    const run = new JobRun(deps, job, token);
    validate(run);
    identify(run);
    const stages = run.history ? scheduled : onDemand;
    return running ? whileRunning(running, run, stages) : stages(run);
  };
}

/**
 * The run is among the running jobs (RunningJobs: what cancels, shutdown and the lost-delivery check look
 * at) until its stages end, whichever way. An async function rather than `.finally`, which makes three
 * promises per job where this makes one.
 */
async function whileRunning(running: RunningJobs, run: JobRun, stages: Next): Promise<unknown> {
  running.add(run);
  try {
    return await stages(run);
  } finally {
    running.delete(run);
  }
}
