import { formatBytes, type MemoryTimelineView, type Percentiles, type QueueTimelineView, type ScheduleTimelineView, type TimelineRange } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { formatCount, formatMs, perStep, renderChart } from './chart.js';

/** The charts of the overview, queue and schedule pages, from the timelines read for them (@tickwork/operations timeline/). */

export const RANGE_WORDS: Record<TimelineRange, string> = { '1h': 'the last hour', '24h': 'the last 24 hours', '30d': 'the last 30 days' };

const COLORS = { completed: '#2f9e55', failed: '#d64545', retried: '#d9961a', deadLettered: '#7b3fb8', p50: '#2f6fd6', p95: '#d9961a', used: '#2f6fd6', max: '#d64545' };

/** Links to the same page over each range, the current one marked. */
export function rangeLinks(path: string, current: TimelineRange, ranges: readonly TimelineRange[]): SafeHtml {
  return html`<p class="ranges">Show: ${ranges.map(
    (r, i) => html`${i > 0 && ' · '}${r === current ? html`<strong aria-current="true">${RANGE_WORDS[r]}</strong>` : html`<a href="${path}?range=${r}">${RANGE_WORDS[r]}</a>`}`,
  )} <span class="muted">(times in UTC)</span></p>`;
}

const startOf = (points: readonly { at: string }[]): number => Date.parse(points[0]?.at ?? new Date().toISOString());

/** A percentile summary: `p50 12 ms, p95 40 ms, p99 90 ms (1,234 measured)`. */
export function percentileWords(p: Percentiles | undefined): string {
  if (!p || p.count === 0) return 'none measured';
  const w = (v: number | null) => (v === null ? '-' : formatMs(v));
  return `p50 ${w(p.p50)}, p95 ${w(p.p95)}, p99 ${w(p.p99)} (${p.count} measured)`;
}

/** Completed and failed per step (with `all`, also retried and dead-lettered). */
export function throughputChart(v: QueueTimelineView, all = false): SafeHtml {
  const t = v.totals;
  const series = [
    { name: 'completed', color: COLORS.completed, values: v.points.map((p) => p.completed) },
    { name: 'failed', color: COLORS.failed, values: v.points.map((p) => p.failed) },
    ...(all
      ? [
          { name: 'retried', color: COLORS.retried, values: v.points.map((p) => p.retried) },
          { name: 'dead-lettered', color: COLORS.deadLettered, values: v.points.map((p) => p.deadLettered) },
        ]
      : []),
  ];
  return renderChart({
    id: `throughput-${v.queue}`,
    title: `Queue ${v.queue}: jobs completed and failed per ${perStep(v.stepMs)}, ${RANGE_WORDS[v.range]}`,
    summary: `${t.completed} completed, ${t.failed} failed for good, ${t.retried} attempts failed and retried, ${t.deadLettered} dead-lettered in ${RANGE_WORDS[v.range]}.`,
    unit: `jobs / ${perStep(v.stepMs)}`,
    startMs: startOf(v.points),
    stepMs: v.stepMs,
    series,
    format: formatCount,
    empty: v.written ? undefined : `No jobs counted in ${RANGE_WORDS[v.range]}`,
  });
}

/** p50 and p95 of a queue's wait (ready to first start) or run time per step. */
export function latencyChart(v: QueueTimelineView, which: 'wait' | 'run'): SafeHtml {
  const what = which === 'wait' ? 'wait (ready to first start)' : 'run time';
  const of = (p: QueueTimelineView['points'][number]) => (which === 'wait' ? p.wait : p.run);
  const overall = which === 'wait' ? v.wait : v.run;
  return renderChart({
    id: `${which}-${v.queue}`,
    title: `Queue ${v.queue}: ${what} p50 and p95 per ${perStep(v.stepMs)}, ${RANGE_WORDS[v.range]}`,
    summary: `Over ${RANGE_WORDS[v.range]}: ${percentileWords(overall)}.`,
    unit: 'duration',
    startMs: startOf(v.points),
    stepMs: v.stepMs,
    series: [
      { name: 'p50', color: COLORS.p50, values: v.points.map((p) => of(p)?.p50 ?? null) },
      { name: 'p95', color: COLORS.p95, values: v.points.map((p) => of(p)?.p95 ?? null) },
    ],
    format: formatMs,
    empty: overall && overall.count > 0 ? undefined : `No ${which === 'wait' ? 'waits' : 'runs'} measured in ${RANGE_WORDS[v.range]}`,
  });
}

/** Jobs moved to the dead-letter queues per step, all queues together. */
export function dlqInflowChart(views: readonly QueueTimelineView[], range: TimelineRange): SafeHtml {
  const first = views[0];
  const steps = first?.points.length ?? 0;
  const values = Array.from({ length: steps }, (_, i) => views.reduce((sum, v) => sum + (v.points[i]?.deadLettered ?? 0), 0));
  const total = values.reduce((a, b) => a + b, 0);
  const stepMs = first?.stepMs ?? 60_000;
  return renderChart({
    id: 'dlq-inflow',
    title: `Dead-letter inflow per ${perStep(stepMs)}, all queues, ${RANGE_WORDS[range]}`,
    summary: `${total} jobs dead-lettered in ${RANGE_WORDS[range]}${views.filter((v) => v.totals.deadLettered > 0).map((v) => `; ${v.queue}: ${v.totals.deadLettered}`).join('')}.`,
    unit: `jobs / ${perStep(stepMs)}`,
    startMs: first ? startOf(first.points) : Date.now(),
    stepMs,
    series: [{ name: 'dead-lettered', color: COLORS.deadLettered, values }],
    format: formatCount,
    empty: views.some((v) => v.written) ? undefined : `No jobs counted in ${RANGE_WORDS[range]}`,
  });
}

/** Redis used_memory (the largest sample per step) and maxmemory. */
export function memoryChart(v: MemoryTimelineView): SafeHtml {
  const used = v.points.map((p) => p.usedBytes);
  const last = [...v.points].reverse().find((p) => p.usedBytes !== null);
  const peak = Math.max(0, ...used.filter((b): b is number => b !== null));
  const hasMax = v.points.some((p) => (p.maxBytes ?? 0) > 0);
  return renderChart({
    id: 'redis-memory',
    title: `Redis memory used per ${perStep(v.stepMs)}, ${RANGE_WORDS[v.range]}`,
    summary: last ? `Latest sample ${formatBytes(last.usedBytes ?? 0)}${last.maxBytes ? ` of ${formatBytes(last.maxBytes)} maxmemory` : ' (no maxmemory)'}; peak ${formatBytes(peak)} in ${RANGE_WORDS[v.range]}.` : 'No samples.',
    unit: 'bytes',
    startMs: startOf(v.points),
    stepMs: v.stepMs,
    series: [
      { name: 'used_memory', color: COLORS.used, values: used },
      ...(hasMax ? [{ name: 'maxmemory', color: COLORS.max, values: v.points.map((p) => p.maxBytes || null), dashed: true }] : []),
    ],
    format: formatBytes,
    empty: v.written ? undefined : `No samples in ${RANGE_WORDS[v.range]}: the scheduler samples once a minute (CHART_HISTORY=on)`,
  });
}

/** A catalog schedule's runs per hour by outcome. */
export function scheduleOutcomeChart(v: ScheduleTimelineView): SafeHtml {
  const t = v.totals;
  return renderChart({
    id: `outcomes-${v.schedule}`,
    title: `Schedule ${v.schedule}: runs per hour by outcome, ${RANGE_WORDS[v.range]}`,
    summary: `${t.completed} completed, ${t.failed} failed, ${t.retried} attempts retried, ${t.missed} missed, ${t.skipped} skipped, ${t.cancelled} cancelled in ${RANGE_WORDS[v.range]}.`,
    unit: 'runs / h',
    startMs: startOf(v.points),
    stepMs: v.stepMs,
    series: [
      { name: 'completed', color: COLORS.completed, values: v.points.map((p) => p.completed) },
      { name: 'failed', color: COLORS.failed, values: v.points.map((p) => p.failed) },
      { name: 'missed or skipped', color: COLORS.retried, values: v.points.map((p) => p.missed + p.skipped) },
    ],
    format: formatCount,
    empty: v.written ? undefined : `No runs counted in ${RANGE_WORDS[v.range]}`,
  });
}

/** A catalog schedule's fire lag or run time per hour (p50, p95). */
export function scheduleLatencyChart(v: ScheduleTimelineView, which: 'lag' | 'run'): SafeHtml {
  const what = which === 'lag' ? 'fire lag (nominal time to first start)' : 'run time';
  const overall = which === 'lag' ? v.lag : v.run;
  return renderChart({
    id: `${which}-${v.schedule}`,
    title: `Schedule ${v.schedule}: ${what} p50 and p95 per hour, ${RANGE_WORDS[v.range]}`,
    summary: `Over ${RANGE_WORDS[v.range]}: ${percentileWords(overall)}.`,
    unit: 'duration',
    startMs: startOf(v.points),
    stepMs: v.stepMs,
    series: [
      { name: 'p50', color: COLORS.p50, values: v.points.map((p) => (which === 'lag' ? p.lag : p.run).p50) },
      { name: 'p95', color: COLORS.p95, values: v.points.map((p) => (which === 'lag' ? p.lag : p.run).p95) },
    ],
    format: formatMs,
    empty: overall.count > 0 ? undefined : `No ${which === 'lag' ? 'starts' : 'runs'} measured in ${RANGE_WORDS[v.range]}`,
  });
}
