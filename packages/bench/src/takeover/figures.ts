/**
 * The takeover bench's figures, read from the schedules' histories once the run is over: per kill, how long
 * until the dead scheduler was found and its claims re-planned, until the first late occurrence was added and
 * until every schedule it held fired again, and what the takeover recorded (missed, skipped-overlap).
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
  /** When the first late occurrence of a held schedule was added, and when the last held schedule had one added. */
  firstEnqueuedMs: number;
  lastResumedMs: number;
  /** Of the held schedules' occurrences from the held one to the takeover's plan: recorded missed, skipped-overlap. */
  missed: number;
  skippedOverlap: number;
}

export interface RunFigures {
  occurrences: number;
  byOutcome: Map<string, number>;
  kills: KillFigures[];
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
  return { occurrences, byOutcome, kills: kills.map((k) => killFigures(k, histories)) };
}

function killFigures(kill: Kill, histories: Map<string, OccurrenceRecord[]>): KillFigures {
  const replanned: number[] = [];
  const enqueued: number[] = [];
  let missed = 0;
  let skippedOverlap = 0;
  for (const c of kill.held) {
    const later = (histories.get(c.id) ?? []).filter((h) => ms(h.nominal) >= c.nominal);
    const first = later[0];
    if (!first || ms(first.nominal) !== c.nominal) continue;
    const claimedAt = ms(first.claimedAt);
    replanned.push(claimedAt - kill.killAt);
    const resumed = later.find((h) => h.enqueuedAt !== undefined && h.outcome !== 'missed');
    if (resumed) enqueued.push(ms(resumed.enqueuedAt) - kill.killAt);
    // The takeover's own plan: the held occurrence up to what was due when it was re-planned, and a second on.
    for (const h of later.filter((r) => ms(r.nominal) <= claimedAt + 1000)) {
      if (h.outcome === 'missed') missed++;
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
    missed,
    skippedOverlap,
  };
}
