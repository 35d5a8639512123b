import type { MemoryTimelineView, QueueTimelineView, TimelineRange } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { layout } from './layout.js';
import { queuePath } from './links.js';
import { dlqInflowChart, latencyChart, memoryChart, percentileWords, RANGE_WORDS, rangeLinks, throughputChart } from './timeline-charts.js';

export const OVERVIEW_RANGES: readonly TimelineRange[] = ['1h', '24h', '30d'];

const HISTORY_NOTE = html`<p class="muted">Workers count every attempt per queue and write the counts every few seconds; the scheduler samples Redis memory once a minute (CHART_HISTORY). Kept per minute for 24 hours and per hour for 30 days.</p>`;

/** `/overview`: Redis memory, dead-letter inflow, and each queue's throughput over a range. */
export function renderOverview(o: { range: TimelineRange; memory: MemoryTimelineView; queues: readonly QueueTimelineView[] }): SafeHtml {
  const body = html`<h1>Overview</h1>
${rangeLinks('/overview', o.range, OVERVIEW_RANGES)}
${HISTORY_NOTE}
<h2>Redis memory</h2>
${memoryChart(o.memory)}
<h2>Dead-letter inflow</h2>
${dlqInflowChart(o.queues, o.range)}
<h2>Throughput per queue</h2>
${
  o.queues.length === 0
    ? html`<p class="muted">No queues yet.</p>`
    : o.queues.map(
        (v) => html`<section class="queue-chart" id="queue-${v.queue}">
<h3><a href="${queuePath(v.queue)}?range=${o.range}">${v.queue}</a> <span class="muted">${v.totals.completed} completed, ${v.totals.failed} failed, ${v.totals.retried} retried, ${v.totals.deadLettered} dead-lettered in ${RANGE_WORDS[o.range]}</span></h3>
${throughputChart(v)}
</section>`,
      )
}`;
  return layout({ title: 'Overview', section: 'overview', body });
}

/** `/queue/:name`: a queue's throughput, wait and run time over a range, with links to its other pages. */
export function renderQueue(v: QueueTimelineView): SafeHtml {
  const q = encodeURIComponent(v.queue);
  const body = html`<p><a href="/overview?range=${v.range}">← Overview</a></p>
<h1>Queue ${v.queue}</h1>
<p><a href="/jobs?queue=${q}">Running jobs</a> · <a href="/dead-letters?queue=${q}">Dead letters</a> · <a href="/queues/queue/${q}">Bull Board</a></p>
${rangeLinks(queuePath(v.queue), v.range, OVERVIEW_RANGES)}
<dl id="queue-totals">
<dt>Completed</dt><dd>${v.totals.completed}</dd>
<dt>Failed for good</dt><dd>${v.totals.failed}</dd>
<dt>Attempts retried</dt><dd>${v.totals.retried}</dd>
<dt>Dead-lettered</dt><dd>${v.totals.deadLettered}</dd>
<dt>Wait</dt><dd>${percentileWords(v.wait)}</dd>
<dt>Run time</dt><dd>${percentileWords(v.run)}</dd>
</dl>
<h2>Throughput</h2>
${throughputChart(v, true)}
<h2>Wait</h2>
<p class="muted">From a job being ready (added, or its delay over) to its first attempt's start. Percentiles are read from log-scale buckets (each a doubling), so a figure is within its bucket.</p>
${latencyChart(v, 'wait')}
<h2>Run time</h2>
${latencyChart(v, 'run')}`;
  return layout({ title: `Queue ${v.queue}`, section: 'overview', body });
}
