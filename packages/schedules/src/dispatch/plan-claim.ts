import type { Catalog, Logger } from '@tickwork/core';
import { occurrenceKey } from '@tickwork/core';
import { planOccurrences } from '../rules/catch-up.js';
import { occurrenceJobId } from '../keys.js';
import { nextOccurrences } from '../rules/occurrences.js';
import { historyCapOf, parseDef, policiesOfCore, ruleOfCore } from '../store/definition.js';
import { intervalAfter } from '../store/resume.js';
import type { Commit, DispatchResult, OccurrenceJob } from './types.js';

const UNKNOWN_JOB_RETRY_MS = 60_000;

/** One claimed entry, as CLAIM returned it. */
export interface ClaimedEntry {
  id: string;
  /** The nominal time of its next occurrence not yet dealt with. */
  nominal: number;
  /** Its definition as stored (definition.ts). */
  raw: string;
  /** Claimed from a replica that died holding it (its lease expired, or was released: takeover.ts). */
  takenOver: boolean;
}

export interface PlanContext {
  catalog: Catalog;
  log: Logger;
  graceMs: number;
  lookaheadMs: number;
  /** The add-ahead window, when the dispatcher adds ahead (lift-lane.ts): entries due beyond the look-ahead were claimed up to it. */
  addAheadMs?: number | undefined;
}

/**
 * Plans one claimed entry with the pure planner (missed/catch-up policies, grace) from its nominal time:
 * pushes its runs to add onto `runs`, counts what it decided into `result`, and returns what COMMIT writes.
 * A taken-over entry is planned with `supersede` (catch-up.ts): of the occurrences that came due while its
 * claimer was dead, only the latest runs on time; the earlier ones go by the schedule's missed policy. One
 * taken over later than the grace is planned as any outage.
 */
export function planClaim(ctx: PlanContext, entry: ClaimedEntry, now: number, runs: OccurrenceJob[], result: DispatchResult): Commit {
  const { id, nominal } = entry;
  const def = parseDef(entry.raw);
  const cap = historyCapOf(def.core);
  if (!ctx.catalog.get(def.core.j)) {
    // A runtime schedule of a job this deploy lacks (removed, or a newer deploy added it): retry later.
    ctx.log.warn({ schedule: id, job: def.core.j }, 'schedule runs a job this catalog does not have; retrying in a minute');
    return { id, next: now + UNKNOWN_JOB_RETRY_MS, watchDeadline: null, cap, records: [] };
  }
  const rule = ruleOfCore(id, def.core);
  const policies = policiesOfCore(def.core);
  // Claimed ahead (beyond the look-ahead): added ahead only when it is the schedule's one occurrence in the
  // window, so a schedule has at most one occurrence added ahead at a time (its history is not filled with
  // runs to come, nor its queue with delayed jobs). A more frequent schedule, or a paused one (a resume
  // before its time must find it unjudged), goes back to wait for the look-ahead, noted so that claims ahead
  // skip it until then.
  const aheadMs = ctx.addAheadMs;
  const ahead = aheadMs !== undefined && nominal > now + ctx.lookaheadMs;
  if (ahead) {
    const interval = intervalAfter(rule, nominal);
    if (def.paused || (interval !== null && interval < aheadMs)) return { id, next: nominal, watchDeadline: null, cap, records: [], notAhead: true };
  }
  const lookaheadMs = ahead ? nominal - now : ctx.lookaheadMs;
  const planned = planOccurrences({ rule, policies, cursor: nominal - 1, now, graceMs: ctx.graceMs, lookaheadMs, supersede: entry.takenOver });
  const after = planned.items.length > 0 ? planned.cursor : nominal - 1;
  const next = nextOccurrences(rule, new Date(after), 1)[0]?.at.getTime() ?? null;
  // The deadline index is for runtime schedules that opted in; catalog schedules have the watchdog's full pass.
  const watched = def.core.W === 1;
  const claimedAt = new Date(now).toISOString();
  const records: Commit['records'] = [];
  let watchDeadline: number | null = null;
  for (const item of planned.items) {
    const at = item.at.getTime();
    const rid = occurrenceKey(id, item.at);
    const trigger = item.action === 'catch-up' ? 'catch-up' : 'schedule';
    if (item.action === 'missed' || def.paused) {
      const outcome = item.action === 'missed' ? 'missed' : 'skipped-paused';
      if (outcome === 'missed') result.missed++;
      else result.skippedPaused++;
      records.push({ id: rid, score: at, patch: { outcome }, defaults: { id: rid, schedule: id, nominal: item.at.toISOString(), trigger, claimedAt } });
      continue;
    }
    const intervalMs = watched ? intervalAfter(rule, at) : null;
    if (watched && watchDeadline === null) watchDeadline = at + 3 * (intervalMs ?? 60_000);
    runs.push({ id, def, nominal: at, catchUp: item.action === 'catch-up', intervalMs });
    if (item.action === 'catch-up') result.caughtUp++;
    else result.enqueued++;
    const jobId = occurrenceJobId(id, item.at);
    records.push({ id: rid, score: at, patch: { enqueuedAt: new Date().toISOString() }, defaults: { id: rid, schedule: id, nominal: item.at.toISOString(), trigger, claimedAt, jobId } });
  }
  // A taken-over claim's superseded occurrences are the dispatcher's one line per round, not one per schedule.
  if (!entry.takenOver && planned.items.some((i) => i.action !== 'enqueue')) {
    ctx.log.warn({ schedule: id, policy: policies.missed, items: planned.items.length }, 'occurrences were due while no scheduler ran');
  }
  return { id, next, watchDeadline, cap, records };
}
