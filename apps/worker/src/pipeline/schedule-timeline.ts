import type { Delivery } from '@tickwork/core';
import type { ScheduleTimeline } from '@tickwork/operations';
import type { RunRecorder, StartVerdict } from '@tickwork/schedules';

/**
 * A catalog schedule's run recorder that also counts the run in the schedule's charts (in memory; the
 * worker's TimelineWriter flushes them): its fire lag (nominal time to its first attempt's start, for
 * occurrences the scheduler enqueued: not for manual runs), its handler's time and its outcome. Only catalog
 * schedules' runs come here (identify decides): a scheduled run is already a few Redis writes, and this adds
 * none of its own.
 */
export function countedRuns(recorder: RunRecorder, timeline: ScheduleTimeline, delivery: Delivery): RunRecorder {
  const scheduled = delivery.scheduled;
  const nominal = scheduled && scheduled.m === undefined ? scheduled.nominal : undefined;
  let startedAt: number | undefined;
  /** The start's verdict, counted once (startedEntering's, or started's own). */
  let counted: StartVerdict | undefined;
  const count = (at: number, attempt: number, verdict: StartVerdict): StartVerdict => {
    if (counted !== undefined) return verdict;
    counted = verdict;
    if (verdict !== 'ok') {
      // Not run: its schedule was removed, changed or paused after it was enqueued.
      timeline.ended('skipped');
      return verdict;
    }
    startedAt = Date.now();
    if (attempt === 1 && nominal !== undefined) timeline.lag(at - nominal);
    return verdict;
  };
  const ranFor = () => (startedAt === undefined ? undefined : Date.now() - startedAt);
  return {
    async started(attempt) {
      const at = Date.now();
      return count(at, attempt, await recorder.started(attempt));
    },
    async startedEntering(attempt, enter) {
      const at = Date.now();
      const outcome = await recorder.startedEntering(attempt, enter);
      if ('verdict' in outcome) count(at, attempt, outcome.verdict);
      return outcome;
    },
    // The start it keeps is counted when the run asks for it (started, startedEntering).
    claimStarting: (attempt, enter) => recorder.claimStarting(attempt, enter),
    succeeded(leave) {
      timeline.ended('completed', ranFor());
      return recorder.succeeded(leave);
    },
    failed(err, final, leave) {
      timeline.ended(final ? 'failed' : 'retried', ranFor());
      return recorder.failed(err, final, leave);
    },
    skippedOverlap(reason) {
      timeline.ended('skipped');
      return recorder.skippedOverlap(reason);
    },
    missed(reason) {
      timeline.ended('missed');
      return recorder.missed(reason);
    },
    catchingUp: () => recorder.catchingUp(),
    cancelled(reason) {
      timeline.ended('cancelled');
      return recorder.cancelled(reason);
    },
  };
}
