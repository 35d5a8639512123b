import type { Job } from 'bullmq';
import type { ProcessorDeps } from './pipeline/deps.js';
import type { RunningJobs } from './running-jobs.js';
import { JobRun } from './pipeline/job-run.js';
import { compose, type Stage } from './pipeline/stage.js';
import { traced, tracesOn } from '@tickwork/core';
import type { Next } from './pipeline/job-run.js';
import { identify, validate } from './pipeline/stages/admit.js';
import { cancelGate } from './pipeline/stages/cancel-gate.js';
import { claim } from './pipeline/stages/claim.js';
import { execute } from './pipeline/stages/execute.js';
import { judgeLate, onTime, overlapPolicy, scheduleGate } from './pipeline/stages/scheduled.js';
import { runOccurrenceBatch } from './pipeline/occurrence-batch.js';
import { OCCURRENCE_BATCH_JOB } from '@tickwork/core';



/**
 * A job's way through the worker, stage by stage (pipeline/stages):
 *
 *   validate → identify → cancelGate → [judgeLate → overlapPolicy → onTime →] claim → [scheduleGate →] execute
 *
 * The bracketed stages are for runs of a schedule only (its occurrences, runs now and re-drives of its
 * runs); every other job, an ad-hoc enqueue of a scheduled job included, skips them entirely. claim
 * frames the stages after it: it records their result (or gives the run back) when they end. A batch of
 * occurrences (pipeline/occurrence-batch.ts) runs each of its occurrences this way, one after another.
 */
const ON_DEMAND: Named[] = [['cancel-gate', cancelGate], ['claim', claim], ['execute', execute]];
const SCHEDULED: Named[] = [
  ['cancel-gate', cancelGate],
  ['judge-late', judgeLate],
  ['overlap-policy', overlapPolicy],
  ['on-time', onTime],
  ['claim', claim],
  ['schedule-gate', scheduleGate],
  ['execute', execute],
];
type Named = readonly [name: string, stage: Stage];

/**
 * The chain, built once per processor. With traces on, each stage runs in a span of its own (`tickwork.<stage>`,
 * nested as the stages are: a stage's span holds the stages after it); off, the stages themselves.
 */
function chain(stages: readonly Named[], tracing: boolean): Next {
  return compose(stages.map(([name, stage]): Stage => (tracing ? (run, next) => traced(`tickwork.${name}`, {}, () => stage(run, next)) : stage)));
}

/**
 * The BullMQ processor. It takes two parameters, not BullMQ's third (a signal): BullMQ makes an
 * AbortController per job only for a processor that declares one, and aborts go through RunningJobs
 * instead (running-jobs.ts). Not async: validate and identify throw synchronously, which BullMQ catches
 * like a rejection, and a job start costs no promise of its own.
 */
export function createProcessor(deps: ProcessorDeps): (job: Job, token?: string) => Promise<unknown> {
  const running = deps.running;
  const tracing = tracesOn();
  const onDemand = chain(ON_DEMAND, tracing);
  const scheduled = chain(SCHEDULED, tracing);
  const runStages = (run: JobRun): Promise<unknown> => {
    const stages = run.history ? scheduled : onDemand;
    return running ? whileRunning(running, run, stages) : stages(run);
  };
  const start = (job: Job, token: string | undefined): Promise<unknown> => {
    if (job.name === OCCURRENCE_BATCH_JOB) return runOccurrenceBatch(deps, job, token, runStages);
    const run = new JobRun(deps, job, token);
    validate(run);
    identify(run);
    return runStages(run);
  };
  if (!tracing) return start;
  // Traces on: the run is a span (a child of BullMQ's process span), its stages and steps its children.
  return (job, token) =>
    traced('tickwork.run', { 'tickwork.queue': job.queueName, 'tickwork.job.id': String(job.id), 'tickwork.job.name': job.name, 'tickwork.attempt': job.attemptsMade + 1 }, async () => start(job, token));
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
