/**
 * The takeover bench's figures, read from the schedules' histories once the run is over: per kill, how long
 * until the dead scheduler was found and its claims re-planned, until the first run of a schedule it held
 * was planned and until every one of them was, and what the takeover recorded (missed, skipped-overlap).
 */
import type { RedisClient } from '@tickwork/core';
import { readHistory, type HeldClaim, type OccurrenceRecord } from '@tickwork/schedules';

export interface Kill {
  replica: string;
  killAt: number;
  /** The claims it held when it died. */
  held: HeldClaim[];
  /** When a live scheduler logged that it released them (its log line's time), if one did. */
  releasedAt: number | undefined;
}

export interface KillFigures {
  replica: string;
  claims: number;
  detectedMs: number | undefined;
  /** When the held claims were re-planned (their records' claimedAt), from the kill: first and last. */
  replannedMs: [number, number];
  /** When the first run of a held schedule was planned (its record's enqueuedAt), and when the last held schedule's was. */
  firstEnqueuedMs: number;
  lastResumedMs: number;
  /** The most runs the takeover's plan added for one schedule (a burst is more than one). */
  maxAddedPerSchedule: number;
  /** Held schedules' occurrences from the held one to 2 s after the re-plan: recorded missed; run or skipped, and of those skipped-overlap. */
  missed: number;
  ranOrSkipped: number;
  skippedOverlap: number;
}

/** Skipped-overlap among occurrences not recorded missed. */
export interface Rate {
  skipped: number;
  of: number;
}

export interface RunFigures {
  occurrences: number;
  byOutcome: Map<string, number>;
  kills: KillFigures[];
  /** Outside the takeover windows (the machine's own rate: a worker that falls behind skips by overlap too). */
  background: Rate;
}

const ms = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));

export async function runFigures(redis: RedisClient, prefix: string, ids: readonly string[], kills: readonly Kill[]): Promise<RunFigures> {
  const histories = new Map<string, OccurrenceRecord[]>();
  for (const id of ids) histories.set(id, (await readHistory(redis, prefix, id, 1000)).reverse());
  const byOutcome = new Map<string, number>();
  let occurrences = 0;
  for (const history of histories.values()) {
    for (const h of history) {
      occurrences++;
      const outcome = h.outcome ?? 'none';
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    }
  }
  const windows: { id: string; from: number; to: number }[] = [];
  const figures = kills.map((k) => killFigures(k, histories, windows));
  const background: Rate = { skipped: 0, of: 0 };
  for (const [id, history] of histories) {
    for (const h of history) {
      const at = ms(h.nominal);
      if (h.outcome === 'missed' || windows.some((w) => w.id === id && at >= w.from && at <= w.to)) continue;
      background.of++;
      if (h.outcome === 'skipped-overlap') background.skipped++;
    }
  }
  return { occurrences, byOutcome, kills: figures, background };
}

function killFigures(kill: Kill, histories: Map<string, OccurrenceRecord[]>, windows: { id: string; from: number; to: number }[]): KillFigures {
  const replanned: number[] = [];
  const enqueued: number[] = [];
  let maxAdded = 0;
  let missed = 0;
  let ranOrSkipped = 0;
  let skippedOverlap = 0;
  for (const c of kill.held) {
    const later = (histories.get(c.id) ?? []).filter((h) => ms(h.nominal) >= c.nominal);
    const first = later[0];
    if (!first || ms(first.nominal) !== c.nominal) continue;
    const claimedAt = ms(first.claimedAt);
    replanned.push(claimedAt - kill.killAt);
    const resumed = later.find((h) => h.enqueuedAt !== undefined && h.outcome !== 'missed');
    if (resumed) enqueued.push(ms(resumed.enqueuedAt) - kill.killAt);
    maxAdded = Math.max(maxAdded, later.filter((h) => h.claimedAt === first.claimedAt && h.enqueuedAt !== undefined && h.outcome !== 'missed').length);
    const window = { id: c.id, from: c.nominal, to: claimedAt + 2000 };
    windows.push(window);
    for (const h of later.filter((r) => ms(r.nominal) <= window.to)) {
      if (h.outcome === 'missed') missed++;
      else ranOrSkipped++;
      if (h.outcome === 'skipped-overlap') skippedOverlap++;
    }
  }
  return {
    replica: kill.replica,
    claims: kill.held.length,
    detectedMs: kill.releasedAt === undefined ? undefined : kill.releasedAt - kill.killAt,
    replannedMs: [Math.min(...replanned), Math.max(...replanned)],
    firstEnqueuedMs: Math.min(...enqueued),
    lastResumedMs: Math.max(...enqueued),
    maxAddedPerSchedule: maxAdded,
    missed,
    ranOrSkipped,
    skippedOverlap,
  };
}
