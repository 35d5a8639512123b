import { checkedDeliveryOf, describeIssues, idempotencyKeyOf, InvalidJobOptionError, nominalTimeOf, PayloadValidationError, validatePayload } from '@tickwork/core';
import { jobRecordKey, runRecordPlaceOf } from '@tickwork/exactly-once';
import { runRecorder } from '@tickwork/schedules';
import { UnrecoverableError } from 'bullmq';
import type { JobRun } from '../job-run.js';
import { countedRuns } from '../schedule-timeline.js';

/**
 * validate: finds the handler by job name and validates the payload and tickwork's job options. Unknown
 * names and invalid payloads can never succeed, so they fail without retries (UnrecoverableError) instead
 * of burning attempts. Synchronous: a job that cannot run fails before anything is awaited.
 */
export function validate(run: JobRun): void {
  const { job, deps } = run;
  const def = deps.catalog.get(job.name);
  if (!def) {
    run.timeline?.refused();
    run.log.error({ known: deps.catalog.jobs.map((j) => j.name) }, 'unknown job: no handler in the catalog of this worker');
    throw new UnrecoverableError('unknown job');
  }
  run.def = def;
  try {
    // An occurrence in its batch comes with its delivery, read with the batch (pipeline/occurrence-batch.ts).
    if (!run.carried) run.delivery = checkedDeliveryOf(job);
    const scheduled = run.delivery.scheduled;
    if (scheduled?.a !== undefined) {
      // An occurrence that left its batch (occurrence-batch.ts): counted on from its attempts there, or failed
      // for good there, which this job now records for the failed set and the DLQ (its history already has it).
      if (scheduled.f !== undefined) throw new UnrecoverableError(scheduled.f);
      run.attempt += scheduled.a;
    }
    run.data = validatePayload(def, job.data);
  } catch (err) {
    // Refused before its handler: a final failure of its queue in the charts, with no run time.
    if (err instanceof PayloadValidationError || err instanceof InvalidJobOptionError) run.timeline?.refused();
    if (err instanceof PayloadValidationError) {
      run.log.error({ issues: err.issues }, 'invalid payload');
      throw new UnrecoverableError(`invalid payload: ${describeIssues(err.issues)}`);
    }
    if (err instanceof InvalidJobOptionError) {
      run.log.error({ option: err.option, issues: err.issues }, 'invalid job option');
      throw new UnrecoverableError(err.message);
    }
    throw err;
  }
}

/**
 * identify: the run's idempotency key, where its ledger record lives, its nominal time, and (runs of a
 * schedule only: runRecorder decides, an ad-hoc enqueue of a scheduled job is not one) its history recorder,
 * which for a catalog schedule's runs also counts them in the schedule's charts (schedule-timeline.ts).
 */
export function identify(run: JobRun): void {
  const { def, delivery, deps } = run;
  const eo = deps.exactlyOnce;
  run.nominalTime = nominalTimeOf(delivery);
  run.key = idempotencyKeyOf(def, delivery, run.data);
  const queue = run.job.queueName;
  run.place = runRecordPlaceOf(def, delivery, jobRecordKey(eo.prefix, queue, run.jobId, eo.redis.isCluster), eo.ledger.windowMs, queue);
  if (def.schedule || delivery.scheduled) {
    const recorder = runRecorder(deps.redis, eo.prefix, def, delivery, () => run.log);
    // A catalog schedule's runs also count in its charts (its id is its job's name); runtime schedules' do not.
    const catalogRun = def.schedule !== undefined && (delivery.scheduled?.schedule ?? def.name) === def.name;
    run.history = recorder && catalogRun && deps.timeline ? countedRuns(recorder, deps.timeline.schedule(def.name), delivery) : recorder;
  }
}
