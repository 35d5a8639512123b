import type { JobsOptions } from 'bullmq';
import type { Catalog } from '@tickwork/core';
import { jobOptions, traced, type QueueSet } from '@tickwork/core';
import { SCHEDULED_RUN_OPTION, type ScheduledRun } from '@tickwork/core';
import { slowAfterMsOf } from '../health/health.js';
import { CATALOG_HISTORY_CAP } from '../store/definition.js';
import { occurrenceJobId } from '../keys.js';
import { historyCapOf, policiesOfCore } from '../store/definition.js';
import { DEFAULT_OVERLAP_POLICY, OCCURRENCE_BATCH_JOB, occurrenceBatchId, type AnyJob, type BatchedOccurrence } from '@tickwork/core';
import { FIRE_NOW_MS } from './fire-lane.js';
import type { OccurrenceJob } from './types.js';


/** The occurrence option: everything the worker's hot path needs, defaults left out. */
export function scheduledRunFor(o: OccurrenceJob): ScheduledRun {
  const { core } = o.def;
  const policies = policiesOfCore(core);
  const cap = historyCapOf(core);
  return {
    schedule: o.id,
    nominal: o.nominal,
    catchUp: o.catchUp,
    v: o.def.version,
    ...(policies.overlap !== DEFAULT_OVERLAP_POLICY && { o: policies.overlap }),
    ...(cap !== CATALOG_HISTORY_CAP && { h: cap }),
    // Runtime schedules that opted in (watch: true) use the slow-run index; catalog ones the watchdog's own pass.
    ...(core.W === 1 && { sa: Math.round(slowAfterMsOf(policies, o.intervalMs)) }),
    ...(o.manual && { m: o.manual.token }),
  };
}

/**
 * Adds the runs, one `addBulk` per queue (deterministic job ids: adding one that exists is a no-op, so a
 * replica re-planning a claim it took over adds nothing twice). The dispatcher adds an on-time occurrence
 * at its time (fire-lane.ts): it goes to the head of the wait list (`lifo`), ahead of any backlog, as does
 * a manual run; a catch-up run queues behind the backlog like any late work. An on-time occurrence is
 * added up to its head start before its time (the worker holds it until then); one due later than that is
 * delayed until its head start before its time. With `ahead` (the dispatcher's add-ahead, lift-lane.ts),
 * such an occurrence is delayed `ahead.slackMs` longer and pushed onto `ahead.jobs` by queue: its lift
 * moves it to the head of the wait list at its head start before its time, and BullMQ's own promotion
 * (to the back) is the fallback when no lift comes.
 * With `batchMax` above 1 (the scheduler's SCHEDULE_BATCH_MAX, while every worker runs batches), the
 * occurrences added ahead that share a job and a time travel as batches of up to `batchMax`
 * (occurrence-batch.ts: one BullMQ job, lifted and fetched once, each occurrence run as its own run by the
 * worker); an occurrence alone at its time, a catch-up and a manual run go as jobs of their own.
 * Returns the ids of runs whose job is unknown to this catalog (not added).
 */
export async function addOccurrenceJobs(
  queues: QueueSet,
  catalog: Catalog,
  runs: readonly OccurrenceJob[],
  now = Date.now(),
  headStartMs = 0,
  ahead?: { slackMs: number; jobs: Map<string, { id: string; at: number }[]> },
  batchMax = 1,
): Promise<string[]> {
  const byQueue = new Map<string, { name: string; data: unknown; opts: JobsOptions }[]>();
  const unknown: string[] = [];
  /** Occurrences to batch, by job and time (`<name>\n<nominal>`), with the delay each would be added with. */
  const batchable = new Map<string, { job: AnyJob; delay: number; at: number; runs: BatchedOccurrence[] }>();
  for (const r of runs) {
    const job = catalog.get(r.def.core.j);
    if (!job) {
      unknown.push(r.id);
      continue;
    }
    const early = r.nominal - headStartMs - now;
    const jobId = r.manual?.jobId ?? occurrenceJobId(r.id, new Date(r.nominal));
    let delay = early > FIRE_NOW_MS ? early : 0;
    if (ahead && delay > 0 && !r.catchUp && !r.manual) {
      delay += ahead.slackMs;
      if (batchMax > 1) {
        const k = `${job.name}\n${r.nominal}`;
        let group = batchable.get(k);
        if (!group) batchable.set(k, (group = { job, delay, at: r.nominal - headStartMs, runs: [] }));
        group.runs.push({ id: jobId, run: scheduledRunFor(r), ...(r.def.core.d !== undefined && { data: r.def.core.d }) });
        continue;
      }
      let noted = ahead.jobs.get(job.queue);
      if (!noted) ahead.jobs.set(job.queue, (noted = []));
      noted.push({ id: jobId, at: r.nominal - headStartMs });
    }
    const opts = {
      ...jobOptions(job),
      jobId,
      delay,
      ...(delay === 0 && !r.catchUp && { lifo: true }),
      [SCHEDULED_RUN_OPTION]: scheduledRunFor(r),
    } as JobsOptions;
    let list = byQueue.get(job.queue);
    if (!list) byQueue.set(job.queue, (list = []));
    list.push({ name: job.name, data: r.def.core.d ?? {}, opts });
  }
  for (const { job, delay, at, runs } of batchable.values()) {
    let list = byQueue.get(job.queue);
    if (!list) byQueue.set(job.queue, (list = []));
    let noted = ahead?.jobs.get(job.queue);
    if (!noted) ahead?.jobs.set(job.queue, (noted = []));
    for (const part of batchesOf(runs, batchMax)) {
      if (part.length === 1) {
        const [one] = part as [BatchedOccurrence];
        list.push({ name: job.name, data: one.data ?? {}, opts: { ...jobOptions(job), jobId: one.id, delay, [SCHEDULED_RUN_OPTION]: one.run } as JobsOptions });
        noted?.push({ id: one.id, at });
        continue;
      }
      const id = occurrenceBatchId(part[0]!.id, part.length);
      list.push({ name: OCCURRENCE_BATCH_JOB, data: { job: job.name, runs: part }, opts: { ...jobOptions(job), ...BATCH_RETRIES, jobId: id, delay } });
      noted?.push({ id, at });
    }
  }
  // Traces on: one span per queue's adds, the parent of BullMQ's addBulk span and so of each run's trace.
  await Promise.all(
    [...byQueue].map(([queue, jobs]) =>
      traced('tickwork.schedule.occurrences', { 'tickwork.queue': queue, 'tickwork.occurrences': jobs.length }, () => queues.get(queue).addBulk(jobs)),
    ),
  );
  return unknown;
}

/** SCHEDULE_BATCH_MAX's default. */
export const DEFAULT_SCHEDULE_BATCH_MAX = 50;

/**
 * A batch's own retries: its occurrences' failures are their own (each leaves the batch), so a batch fails
 * only when it could not hand its occurrences on (Redis unreachable); it is then tried again, and a batch
 * delivered again hands every occurrence on as a job of its own.
 */
const BATCH_RETRIES = { attempts: 10, backoff: { type: 'exponential', delay: 1000 } } as const;

/**
 * The occurrences in batches of at most `max`, in the order of their ids (so a replica that re-plans the
 * same claims makes the same batches), the sizes evened out: 120 at 50 go as 40, 40 and 40.
 */
export function batchesOf(runs: BatchedOccurrence[], max: number): BatchedOccurrence[][] {
  runs.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const parts = Math.ceil(runs.length / max);
  const size = Math.ceil(runs.length / parts);
  const out: BatchedOccurrence[][] = [];
  for (let i = 0; i < runs.length; i += size) out.push(runs.slice(i, i + size));
  return out;
}
