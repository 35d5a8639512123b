import {
  claimOccurrences,
  jobOptions,
  mergeOccurrence,
  occurrenceJobId,
  occurrenceKey,
  planOccurrences,
  policiesOf,
  readHistory,
  effectiveRule,
  SCHEDULED_RUN_OPTION,
  scheduleKeys,
  type AnyJob,
  type Logger,
  type OccurrenceRecord,
  type PlannedOccurrence,
  type QueueSet,
  type ScheduledRun,
} from '@tickwork/runtime';
import type { JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';

export interface TickDeps {
  queues: QueueSet;
  redis: Redis;
  log: Logger;
  graceMs: number;
  lookaheadMs: number;
  /** SCHEDULE_SPEEDUP: every schedule runs on this interval instead of its own. */
  speedupMs?: number | undefined;
}

export interface TickResult {
  enqueued: number;
  caughtUp: number;
  missed: number;
  repaired: number;
}

/** A claimed occurrence still not enqueued after this long was claimed by a replica that died mid-way. */
const REPAIR_AFTER_MS = 10_000;
/** Bounds one tick's work after a very long outage; the cursor carries on from there next tick. */
const MAX_BATCHES_PER_TICK = 4;

/**
 * One scheduling pass for one schedule: plans every occurrence after the cursor up to the look-ahead,
 * claims them atomically (only one replica's claim succeeds for a given cursor), then enqueues the runs
 * with deterministic job ids and records the missed ones. Workers are not involved: occurrences are
 * decided and recorded here even with every worker down.
 */
export async function tickSchedule(deps: TickDeps, job: AnyJob, now = Date.now()): Promise<TickResult> {
  const result: TickResult = { enqueued: 0, caughtUp: 0, missed: 0, repaired: 0 };
  const spec = job.schedule;
  if (!spec) return result;
  const { redis, queues } = deps;
  const prefix = queues.prefix;
  const keys = scheduleKeys(prefix, job.name);
  const rule = effectiveRule(job, deps.speedupMs);
  const policies = policiesOf(job.name, spec);

  let cursor = await redis.get(keys.cursor);
  if (cursor === null) {
    // A schedule seen for the first time starts now: nothing before it existed can have been missed.
    await redis.set(keys.cursor, String(now), 'NX');
    cursor = await redis.get(keys.cursor);
  }
  for (let batch = 0; batch < MAX_BATCHES_PER_TICK && cursor !== null; batch++) {
    const plan = planOccurrences({ rule, policies, cursor: Number(cursor), now, graceMs: deps.graceMs, lookaheadMs: deps.lookaheadMs });
    if (plan.items.length === 0) break;
    const claimedAt = new Date(now).toISOString();
    const records = plan.items.map((item) => recordOf(job.name, item, claimedAt));
    if (!(await claimOccurrences(redis, prefix, job.name, { expectedCursor: cursor, newCursor: plan.cursor, records }))) {
      break; // another replica claimed this range first; it enqueues
    }
    for (const item of plan.items) {
      if (item.action === 'missed') {
        result.missed++;
        continue;
      }
      await enqueueOccurrence(deps, job, item.at, item.action === 'catch-up');
      if (item.action === 'catch-up') result.caughtUp++;
      else result.enqueued++;
    }
    if (result.missed > 0 || result.caughtUp > 0) {
      deps.log.warn(
        { schedule: job.name, policy: policies.missed, missed: result.missed, caughtUp: result.caughtUp },
        'occurrences were due while no scheduler ran',
      );
    }
    cursor = String(plan.cursor);
    if (!plan.truncated) break;
  }
  result.repaired = await repairClaims(deps, job, now);
  return result;
}

function recordOf(schedule: string, item: PlannedOccurrence, claimedAt: string): OccurrenceRecord {
  const base: OccurrenceRecord = {
    id: occurrenceKey(schedule, item.at),
    schedule,
    nominal: item.at.toISOString(),
    trigger: item.action === 'catch-up' ? 'catch-up' : 'schedule',
    claimedAt,
  };
  if (item.action === 'missed') return { ...base, outcome: 'missed' };
  return { ...base, jobId: occurrenceJobId(schedule, item.at) };
}

/** Adds the occurrence's job (a no-op if that id exists) delayed to its nominal time, then marks it enqueued. */
async function enqueueOccurrence(deps: TickDeps, job: AnyJob, at: Date, catchUp: boolean): Promise<void> {
  const meta: ScheduledRun = { schedule: job.name, nominal: at.getTime(), catchUp };
  const jobId = occurrenceJobId(job.name, at);
  const opts = {
    ...jobOptions(job),
    jobId,
    delay: Math.max(0, at.getTime() - Date.now()),
    [SCHEDULED_RUN_OPTION]: meta,
  } as JobsOptions;
  await deps.queues.get(job.queue).add(job.name, job.schedule?.data ?? {}, opts);
  await mergeOccurrence(deps.redis, deps.queues.prefix, job.name, occurrenceKey(job.name, at), at.getTime(), {
    enqueuedAt: new Date().toISOString(),
  });
}

/** Re-enqueues occurrences a replica claimed but died before enqueuing (same job id, so never twice). */
async function repairClaims(deps: TickDeps, job: AnyJob, now: number): Promise<number> {
  let repaired = 0;
  for (const r of await readHistory(deps.redis, deps.queues.prefix, job.name, 20)) {
    if (r.trigger === 'manual' || r.outcome || r.enqueuedAt || r.startedAt || !r.claimedAt) continue;
    if (Date.parse(r.claimedAt) > now - REPAIR_AFTER_MS) continue;
    await enqueueOccurrence(deps, job, new Date(r.nominal), r.trigger === 'catch-up');
    deps.log.warn({ schedule: job.name, occurrence: r.id }, 're-enqueued an occurrence claimed but never enqueued');
    repaired++;
  }
  return repaired;
}
