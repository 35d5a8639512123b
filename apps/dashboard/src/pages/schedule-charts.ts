import type { ScheduleTimelineView } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { schedulePath } from './schedule-actions.js';
import { percentileWords, rangeLinks, scheduleLatencyChart, scheduleOutcomeChart } from './timeline-charts.js';

/**
 * A catalog schedule's charts over time: its runs per hour by outcome, its fire lag and its run time. Kept
 * per hour for 30 days by the workers that run it. Runtime schedules (up to millions) keep none: their page
 * shows their occurrence history, which is bounded per schedule.
 */
export function renderScheduleCharts(v: ScheduleTimelineView): SafeHtml {
  return html`<h2 id="charts">Over time</h2>
${rangeLinks(schedulePath(v.schedule), v.range, ['24h', '30d'])}
<p class="muted">Per hour, counted by the workers as runs end. Fire lag: ${percentileWords(v.lag)}. Run time: ${percentileWords(v.run)}.</p>
${scheduleOutcomeChart(v)}
${scheduleLatencyChart(v, 'lag')}
${scheduleLatencyChart(v, 'run')}`;
}
