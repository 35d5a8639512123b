import type { OccurrenceRecord, RemovedScheduleView, ScheduleView } from '@tickwork/schedules';
import { DateTime } from 'luxon';
import { table } from '../table.js';

/** `cron "0 9 * * *"` or `every 30 s`: what a schedule's rule is, without its tz. */
export function ruleText(v: Pick<ScheduleView, 'pattern' | 'everyMs'>): string {
  if (v.pattern !== undefined) return `cron "${v.pattern}"`;
  return `every ${durationText(v.everyMs ?? 0)}`;
}

export function durationText(ms: number): string {
  const units: [number, string][] = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return `${ms} ms`;
}

/** `2026-03-09T09:00:00.000+01:00 (2026-03-09T08:00:00.000Z)`: local in the schedule's tz, then UTC. */
export function occurrenceText(iso: string | Date | null, tz: string): string {
  if (iso === null) return 'none (the pattern has no further occurrence)';
  const at = typeof iso === 'string' ? new Date(iso) : iso;
  const local = DateTime.fromJSDate(at, { zone: tz }).toISO() ?? at.toISOString();
  return `${local} (${at.toISOString()})`;
}

function pausedText(v: ScheduleView): string {
  return v.paused ? `paused since ${v.paused.at}: ${v.paused.reason}` : 'active';
}

/** One row per schedule, a page of `tickwork schedules ls`. */
export function listTable(items: readonly ScheduleView[]): string {
  return table(
    ['ID', 'SOURCE', 'JOB', 'WHEN', 'TZ', 'NEXT (UTC)', 'STATE'],
    items.map((v) => [v.id, v.source, v.job, ruleText(v), v.tz, v.next ?? '-', v.paused ? `paused: ${v.paused.reason.split('\n')[0]?.slice(0, 40) ?? ''}` : 'active']),
  );
}

/** `tickwork schedules show`: the definition, its state, the next occurrence and recent history. */
export function showText(v: ScheduleView, history: readonly OccurrenceRecord[]): string {
  const p = v.policies;
  const lines = [
    `${v.id}  (${v.source} schedule of job ${v.job}, queue ${v.queue})`,
    `  ${ruleText(v)}  tz ${v.tz}`,
    `  state ${pausedText(v)}`,
    `  next occurrence ${occurrenceText(v.next, v.tz)}`,
    `  dst gap=${p.dst.gap} fold=${p.dst.fold}  missed=${p.missed} window=${p.catchUpWindowMs / 1000}s maxCatchUp=${p.maxCatchUp}  overlap=${p.overlap}` +
      `${p.slowAfterMs !== null ? `  slowAfter=${p.slowAfterMs / 1000}s` : ''}${p.spreadMs !== null ? `  spread=${p.spreadMs / 1000}s (+${v.spreadOffsetMs / 1000}s)` : ''}  watch=${v.watch ? 'on' : 'off'}  history=${v.historyCap}`,
    `  data ${JSON.stringify(v.data)}`,
    `  version ${v.version}  created ${v.createdAt}  updated ${v.updatedAt}`,
  ];
  return [...lines, ...historyLines(history)].join('\n');
}

/** `tickwork schedules show` of a removed schedule: when, what it was (when recorded), its history. */
export function removedText(r: RemovedScheduleView, history: readonly OccurrenceRecord[]): string {
  const v = r.definition;
  const lines = [
    `${r.id}  REMOVED${r.removedAt !== null ? ` at ${r.removedAt}` : ''}; its history is kept${r.expiresAt !== null ? ` until ${r.expiresAt}` : ''}`,
    ...(v ? [`  was: ${v.source} schedule of job ${v.job}, queue ${v.queue}, ${ruleText(v)}  tz ${v.tz}`, `  data ${JSON.stringify(v.data)}`] : ['  its definition was not recorded']),
  ];
  return [...lines, ...historyLines(history)].join('\n');
}

function historyLines(history: readonly OccurrenceRecord[]): string[] {
  if (history.length === 0) return ['  no occurrences recorded'];
  const rows = table(
    ['NOMINAL', 'TRIGGER', 'JOB ID', 'OUTCOME', 'ERROR'],
    history.map((h) => [h.nominal, h.trigger, h.jobId ?? '-', h.outcome ?? (h.startedAt ? 'running' : 'scheduled'), h.error?.split('\n')[0]?.slice(0, 80) ?? '']),
  );
  return ['  recent occurrences (newest first):', ...rows.split('\n').map((l) => `    ${l}`)];
}
