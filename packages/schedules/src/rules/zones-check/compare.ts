import type { DstPolicy } from '@tickwork/core';
import { occurrencesBetween, ruleOf, type Occurrence, type OccurrenceRule } from '../occurrences.js';
import { DAY_MS, scanTimeline, IntlZone, type Timeline, type ZoneTransition } from './intl-zone.js';
import { parseReferenceCron } from './reference-cron.js';
import { dateSkipped, referenceBetween, verifyWithIntl, type ReferenceOccurrence, type ReferenceRule } from './reference.js';
import { DST_POLICIES, type ZoneCase } from './cases.js';

/**
 * Engine against reference, one offset change at a time: for every case and DST policy, the engine's
 * occurrences in a window around the change (from its start, and again from just before the change, which
 * restarts its day walk mid-window) must equal the reference's, instant and label. Shared by the sample in
 * `pnpm test` (zones.property.test.ts) and the whole span (`pnpm bench:zones`).
 */

export interface ZoneTotals {
  windows: number;
  occurrences: number;
  /** Runs one side has and the other has not (an instant or a label that differs counts on both sides). */
  disagreements: number;
  windowsDisagreeing: number;
  /** Daily cases under the default policy: dates in a window without exactly one run on them. */
  dailyBreaks: number;
  /** Reference runs whose wall clock, read with Intl directly, is not what the reference meant. */
  referenceMisfits: number;
  kinds: Record<string, number>;
  /** The first few disagreements, described. */
  samples: string[];
}

export function emptyTotals(): ZoneTotals {
  return { windows: 0, occurrences: 0, disagreements: 0, windowsDisagreeing: 0, dailyBreaks: 0, referenceMisfits: 0, kinds: {}, samples: [] };
}

export function addTotals(into: ZoneTotals, more: ZoneTotals, maxSamples = 20): void {
  for (const key of ['windows', 'occurrences', 'disagreements', 'windowsDisagreeing', 'dailyBreaks', 'referenceMisfits'] as const) into[key] += more[key];
  for (const [kind, n] of Object.entries(more.kinds)) into.kinds[kind] = (into.kinds[kind] ?? 0) + n;
  into.samples.push(...more.samples.slice(0, Math.max(0, maxSamples - into.samples.length)));
}

/** The span a zone is scanned over: 1969 to 2100 with room for the windows at either end. */
export const SPAN = { from: Date.UTC(1969, 0, 1), to: Date.UTC(2101, 0, 1) };

export function scanZone(name: string, from = SPAN.from - 10 * DAY_MS, to = SPAN.to + 10 * DAY_MS): Timeline {
  return scanTimeline(new IntlZone(name), from, to);
}

const referenceRules = new Map<string, ReferenceRule>();

function referenceRule(c: ZoneCase, dst: DstPolicy): ReferenceRule {
  const key = `${c.pattern ?? c.everyMs}\u0000${dst.gap}\u0000${dst.fold}`;
  let rule = referenceRules.get(key);
  if (!rule) {
    rule = c.pattern !== undefined ? { kind: 'cron', cron: parseReferenceCron(c.pattern), dst } : { kind: 'every', everyMs: c.everyMs ?? 0, dst };
    referenceRules.set(key, rule);
  }
  return rule;
}

function engineRule(c: ZoneCase, tz: string, dst: DstPolicy): OccurrenceRule {
  return ruleOf('zones', c.pattern !== undefined ? { pattern: c.pattern, tz, dst } : { every: { milliseconds: c.everyMs ?? 0 }, tz, dst });
}

const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');

/** Compares one list pair, instant and label, and counts what differs. */
function diff(engine: readonly Occurrence[], reference: readonly ReferenceOccurrence[], where: () => string, totals: ZoneTotals): void {
  totals.windows++;
  totals.occurrences += Math.max(engine.length, reference.length);
  if (engine.length === reference.length && engine.every((o, i) => o.at.getTime() === reference[i]?.at && o.kind === reference[i]?.kind)) return;
  const e = engine.map((o) => `${iso(o.at.getTime())} ${o.kind}`);
  const r = reference.map((o) => `${iso(o.at)} ${o.kind}`);
  const onlyEngine = e.filter((k) => !r.includes(k));
  const onlyReference = r.filter((k) => !e.includes(k));
  // Same runs in another order (or a duplicate) still disagree: count it once.
  totals.disagreements += Math.max(1, onlyEngine.length + onlyReference.length);
  totals.windowsDisagreeing++;
  if (totals.samples.length < 20) {
    totals.samples.push(`${where()}: engine only [${onlyEngine.join(', ')}], reference only [${onlyReference.join(', ')}]`);
  }
}

/** The daily promise, on the engine's runs: every date strictly inside the window has one run, on it. */
function dailyBreaks(tl: Timeline, engine: readonly Occurrence[], from: number, to: number): number {
  const dayOf = (t: number) => Math.floor(tl.zone.wallMs(t) / DAY_MS);
  const perDay = new Map<number, number>();
  for (const o of engine) perDay.set(dayOf(o.at.getTime()), (perDay.get(dayOf(o.at.getTime())) ?? 0) + 1);
  let breaks = 0;
  for (let day = dayOf(from) + 1; day < dayOf(to); day++) {
    if ((perDay.get(day) ?? 0) !== (dateSkipped(tl, day) ? 0 : 1)) breaks++;
  }
  return breaks;
}

export interface CheckOptions {
  /** Read reference runs back with Intl (one format a run): every shifted run and one other in `verifyEvery`. */
  verify: boolean;
  verifyEvery?: number;
}

/** Every case and policy around one transition (`before === after`: a quiet instant, no change). */
export function checkAround(tl: Timeline, tr: ZoneTransition, cases: readonly ZoneCase[], opts: CheckOptions): ZoneTotals {
  const totals = emptyTotals();
  const size = Math.abs(tr.after - tr.before);
  for (const c of cases) {
    // Wider by the change's size (a 24-hour change moves whole dates), at most doubled (a minute pattern
    // around Apia's skipped date would otherwise compare 3,000 runs a window).
    const reach = c.reachMs + Math.min(size, c.reachMs);
    const from = tr.at - reach;
    const to = tr.at + reach;
    const restart = tr.at - 1;
    for (const dst of DST_POLICIES) {
      const ref = referenceBetween(tl, referenceRule(c, dst), from, to);
      if (opts.verify) {
        const misfit = verifyWithIntl(tl, referenceRule(c, dst), ref, opts.verifyEvery);
        if (misfit !== null) {
          totals.referenceMisfits++;
          if (totals.samples.length < 20) totals.samples.push(`reference misfit: ${misfit}`);
        }
      }
      const rule = engineRule(c, tl.zone.name, dst);
      const engine = occurrencesBetween(rule, new Date(from), new Date(to)).occurrences;
      const where = () => `${tl.zone.name} ${iso(tr.at)} ${c.pattern ?? `every ${c.everyMs} ms`} ${dst.gap}/${dst.fold}`;
      diff(engine, ref, where, totals);
      // Restarted just before the change, over the first half of what follows (the walk's restart is the point).
      const restartTo = restart + Math.floor((to - restart) / 2);
      const restarted = occurrencesBetween(rule, new Date(restart), new Date(restartTo)).occurrences;
      diff(restarted, ref.filter((o) => o.at > restart && o.at <= restartTo), () => `${where()} (from ${iso(restart)})`, totals);
      for (const o of engine) totals.kinds[o.kind] = (totals.kinds[o.kind] ?? 0) + 1;
      if (c.daily && dst.gap === 'shift' && dst.fold === 'once') totals.dailyBreaks += dailyBreaks(tl, engine, from, to);
    }
  }
  return totals;
}

/** The transitions of a scanned zone inside [from, to). */
export function transitionsBetween(tl: Timeline, from: number, to: number): ZoneTransition[] {
  return tl.transitions.filter((tr) => tr.at >= from && tr.at < to);
}
