import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_OVERLAP_POLICY } from '@tickwork/core';
import { MAX_HEAD_START_MS } from '@tickwork/schedules';
import { judgeLateOccurrence } from '../../late-occurrence.js';
import type { EnterOutcome, OverlapEnterCall, RunOverlap } from '@tickwork/exactly-once';
import type { RunRecorder, StartEntered } from '@tickwork/schedules';
import type { MissedRunResult } from '../deps.js';
import type { JobRun } from '../job-run.js';
import type { Stage } from '../stage.js';

/**
 * judgeLate: the missed-run policy for occurrences that waited for a worker, applied once the run is
 * claimed (claim runs it as its `preempt`, so a dropped occurrence is recorded done). Judged on the first
 * delivery only: a retry, a redelivery after a crash or a buffered occurrence coming back is late by
 * design, not missed.
 */
export const judgeLate: Stage = (run, next) => {
  const { job, delivery, deps, def } = run;
  const scheduled = delivery.scheduled;
  // An occurrence that left its batch (`a`) was delivered on time in it: a retry or a hand-on, not missed.
  if (!scheduled || scheduled.m !== undefined || scheduled.catchUp || scheduled.a !== undefined || delivery.redrive || job.attemptsMade !== 0 || job.attemptsStarted > 1) return next(run);
  // On time as it is delivered (the common case): nothing to judge, and the claim may carry the start (overlapPolicy).
  const graceMs = deps.graceMs ?? 60_000;
  if (Date.now() - scheduled.nominal <= graceMs) return next(run);
  run.preempt = async () => {
    const d = await judgeLateOccurrence(deps.redis, deps.exactlyOnce.prefix, def, scheduled, graceMs);
    if (d.action === 'run' && !d.catchUp) return undefined;
    const fields = { schedule: scheduled.schedule, nominalTime: run.nominalTime, lateByMs: d.lateByMs, laterDue: d.laterDue };
    if (d.action === 'run') {
      run.lateCatchUp = true;
      run.log.info(fields, 'late occurrence runs as a catch-up');
      await run.history?.catchingUp();
      return undefined;
    }
    const result: MissedRunResult = { skipped: 'missed', reason: d.reason };
    run.log.warn(fields, `occurrence missed: ${d.reason}`);
    return { result, recorded: () => run.history?.missed(d.reason) ?? Promise.resolve() };
  };
  return next(run);
};

/**
 * overlapPolicy: applies to occurrences the tickwork scheduler enqueued (BullMQ job schedulers are legacy:
 * reconcile removes them, and their last jobs share the occurrence's ledger key anyway). Occurrences of the
 * schedule store carry their overlap policy (absent = the default); older ones use the job's. Manual runs
 * (runNow) are not subject to it, as a manual enqueue of a catalog job never was. Claim applies it.
 */
export const overlapPolicy: Stage = (run, next) => {
  const scheduled = run.delivery.scheduled;
  const schedule = scheduled?.m === undefined ? scheduled?.schedule : undefined;
  const policy = scheduled?.v !== undefined ? (scheduled.o ?? DEFAULT_OVERLAP_POLICY) : (run.def.schedule?.overlap ?? DEFAULT_OVERLAP_POLICY);
  const history = run.history;
  const single = history !== undefined && !run.deps.redis.isCluster;
  let call: OverlapEnterCall | undefined;
  if (schedule && policy !== 'allow') {
    const overlap: RunOverlap = { schedule, policy, nominalTime: run.nominalTime };
    if (single) {
      const entering = (call = run.deps.exactlyOnce.overlap.enterArgs(schedule, run.key, policy, overlap.nominalTime));
      overlap.enter = () => enterStarting(run, entering);
    }
    run.overlap = overlap;
  }
  // The claim carries the start (and the entry): not for a late occurrence, judged before it starts.
  if (single && !run.preempt) run.claimVia = history.claimStarting(run.attempt, call);
  return next(run);
};

/**
 * On a single Redis, a run enters its overlap slot in its start record's write (startEntering: @tickwork/
 * schedules lua.ts), which its claim carries when it claims a new run (claimStarting), and its end
 * record's write frees the slot (execute): three round trips fewer per scheduled run. On a cluster the
 * slot's hash tag is the schedule's, the history's its shard's, and the run's record its queue's, so the
 * claim, the guard and the start each make their own call. A failed write falls back to the guard's own
 * enter (and scheduleGate to its own start record, retried as ever).
 */
async function enterStarting(run: JobRun, call: OverlapEnterCall): Promise<EnterOutcome> {
  const guard = run.deps.exactlyOnce.overlap;
  const overlap = run.overlap as RunOverlap;
  let outcome: StartEntered;
  try {
    outcome = await (run.history as RunRecorder).startedEntering(run.attempt, call);
  } catch {
    return guard.enter(overlap.schedule, run.key, overlap.policy, overlap.nominalTime);
  }
  if ('entered' in outcome) return guard.outcomeOf(outcome.entered);
  // The gate refused the run (recorded): it did not enter, so its end has nothing to free.
  if (outcome.verdict !== 'ok') overlap.left = true;
  else run.leave = { slot: call.keys[0], holder: run.key };
  return { kind: 'run' };
}

/**
 * onTime: an on-time occurrence arrives its head start before its time (the scheduler's
 * SCHEDULE_HEAD_START_MS; fire-lane.ts), so that the add, the fetch and the delivery are behind it when it is
 * due. It waits here until its time, before anything of the run happens: its claim, its overlap entry, its
 * start's record and gate, its handler all come after. A worker whose clock is behind the scheduler's holds it
 * at most MAX_HEAD_START_MS. Costs one timer per early occurrence; nothing for any other job.
 */
export const onTime: Stage = (run, next) => {
  const nominal = run.delivery.scheduled?.nominal;
  const now = Date.now();
  if (nominal === undefined || nominal <= now) return next(run);
  return until(Math.min(nominal, now + MAX_HEAD_START_MS)).then(() => next(run));
};

/** Resolves once Date.now() reaches `at`: a timer may fire a millisecond before its time by that clock. */
async function until(at: number): Promise<void> {
  for (let left = at - Date.now(); left > 0; left = at - Date.now()) await sleep(left);
}

/**
 * scheduleGate: the start's history write also checks the schedule (same script): a run enqueued before its
 * schedule was removed, changed or paused is not run, and completes with the reason.
 */
export const scheduleGate: Stage = async (run, next) => {
  const verdict = (await run.history?.started(run.attempt)) ?? 'ok';
  if (verdict === 'ok') return next(run);
  run.log.info({ schedule: run.delivery.scheduled?.schedule, nominalTime: run.nominalTime, verdict }, `scheduled run skipped: its schedule was ${verdict}`);
  return { skipped: verdict };
};
