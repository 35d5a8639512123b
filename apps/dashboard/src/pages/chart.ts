import { html, raw, type SafeHtml } from '../html.js';

/**
 * Line charts as server-rendered SVG: no script (the pages' CSP allows none), no stylesheet of their own
 * (presentation attributes only). Every chart has a <title> and a <desc> (its summary in words) for screen
 * readers, times on its x axis in one style (`14:05 UTC`), a y axis with its unit, and an empty state.
 */

export interface ChartSeries {
  name: string;
  color: string;
  /** One value per step; null is a gap in the line (nothing measured in that step). */
  values: readonly (number | null)[];
  /** Dashed (a limit, say maxmemory). */
  dashed?: boolean;
}

export interface ChartSpec {
  /** The element id (also the prefix of the title's and description's ids). */
  id: string;
  title: string;
  /** A summary in words, read out for the chart (totals, percentiles over the range). */
  summary: string;
  /** The unit of the y axis, e.g. `jobs / min`. */
  unit: string;
  /** The start of the first step (ms) and the length of a step. */
  startMs: number;
  stepMs: number;
  series: readonly ChartSeries[];
  /** A y axis value as a label (a count, a duration, bytes). */
  format: (v: number) => string;
  /** Shown instead of lines when nothing was measured in the range. */
  empty?: string | undefined;
}

const W = 720;
const H = 202;
const LEFT = 64;
const RIGHT = 32;
/** The legend sits above the plot. */
const TOP = 24;
const BOTTOM = 26;
const PLOT_W = W - LEFT - RIGHT;
const PLOT_H = H - TOP - BOTTOM;

/** `14:05 UTC`; at midnight of a range over days, `12-01 UTC`. */
export function utcLabel(ms: number, days: boolean): string {
  const iso = new Date(ms).toISOString();
  return days ? `${iso.slice(5, 10)} UTC` : `${iso.slice(11, 16)} UTC`;
}

/** The top of the y axis: 2, 4, 6, 8 or 10 times a power of ten, at least `v` (at least 2), so its half is a round number too. */
export function niceCeil(v: number): number {
  if (!(v > 2)) return 2;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** A step for x ticks: about 6 of them, on round times (5, 10, 15, 30 min, 1, 3, 6, 12 h, 1, 5 days). */
function tickStepMs(spanMs: number): number {
  const steps = [5, 10, 15, 30, 60, 180, 360, 720, 1440, 7200].map((m) => m * 60_000);
  return steps.find((s) => spanMs / s <= 7) ?? (steps[steps.length - 1] as number);
}

const fmt = (n: number) => (Math.round(n * 10) / 10).toString();

/** The path of one series: a subpath per run of values (a null ends a run); a lone value a short tick. */
function pathOf(values: readonly (number | null)[], x: (i: number) => number, y: (v: number) => number): string {
  let d = '';
  let open = false;
  values.forEach((v, i) => {
    if (v === null) {
      open = false;
      return;
    }
    d += `${open ? 'L' : 'M'}${fmt(x(i))} ${fmt(y(v))}`;
    const next = values[i + 1];
    if (!open && (next === null || next === undefined)) d += `h1`;
    open = true;
  });
  return d;
}

export function renderChart(c: ChartSpec): SafeHtml {
  const steps = Math.max(1, ...c.series.map((s) => s.values.length));
  const spanMs = steps * c.stepMs;
  const endMs = c.startMs + spanMs;
  const x = (i: number) => LEFT + ((i + 0.5) / steps) * PLOT_W;
  const xAt = (ms: number) => LEFT + ((ms - c.startMs) / spanMs) * PLOT_W;
  const max = niceCeil(Math.max(0, ...c.series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const y = (v: number) => TOP + PLOT_H - (Math.min(v, max) / max) * PLOT_H;
  const tick = tickStepMs(spanMs);
  const days = tick >= 86_400_000;
  const xTicks: number[] = [];
  for (let t = Math.ceil(c.startMs / tick) * tick; t <= endMs; t += tick) xTicks.push(t);
  const yTicks = [0, max / 2, max];
  const ids = { title: `${c.id}-title`, desc: `${c.id}-desc` };
  const legend = c.series.map(
    (s, i) =>
      html`<g transform="translate(${LEFT + i * 130} 4)"><line x1="0" y1="6" x2="16" y2="6" stroke="${s.color}" stroke-width="2"${s.dashed ? raw(' stroke-dasharray="5 3"') : ''}/><text x="20" y="10" font-size="11" fill="#1d2430">${s.name}</text></g>`,
  );
  return html`<figure class="chart" id="${c.id}">
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="100%" style="max-width:${W}px" role="img" aria-labelledby="${ids.title} ${ids.desc}" font-family="system-ui, sans-serif">
<title id="${ids.title}">${c.title}</title>
<desc id="${ids.desc}">${c.summary}</desc>
<rect x="${LEFT}" y="${TOP}" width="${PLOT_W}" height="${PLOT_H}" fill="#fff" stroke="#d5d9e0"/>
${yTicks.map(
  (v) => html`<line x1="${LEFT}" x2="${LEFT + PLOT_W}" y1="${fmt(y(v))}" y2="${fmt(y(v))}" stroke="#eef0f4"/><text class="y-tick" x="${LEFT - 6}" y="${fmt(y(v) + 4)}" font-size="11" text-anchor="end" fill="#6b7482">${c.format(v)}</text>`,
)}
${xTicks.map(
  (t) => html`<line x1="${fmt(xAt(t))}" x2="${fmt(xAt(t))}" y1="${TOP + PLOT_H}" y2="${TOP + PLOT_H + 4}" stroke="#6b7482"/><text class="x-tick" x="${fmt(xAt(t))}" y="${H - 8}" font-size="11" text-anchor="middle" fill="#6b7482">${utcLabel(t, days)}</text>`,
)}
<text x="12" y="${TOP + PLOT_H / 2}" font-size="11" fill="#6b7482" transform="rotate(-90 12 ${TOP + PLOT_H / 2})" text-anchor="middle">${c.unit}</text>
${
  c.empty !== undefined
    ? html`<text class="empty" x="${LEFT + PLOT_W / 2}" y="${TOP + PLOT_H / 2}" font-size="13" text-anchor="middle" fill="#6b7482">${c.empty}</text>`
    : html`${c.series.map(
        (s) =>
          html`<path class="series" data-series="${s.name}" d="${pathOf(s.values, x, y)}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dashed ? raw(' stroke-dasharray="5 3"') : ''}><title>${s.name}</title></path>`,
      )}${legend}`
}
</svg>
</figure>`;
}

/** A count on an axis: 1200 → 1.2k. */
export function formatCount(v: number): string {
  if (v >= 1_000_000) return `${fmt(v / 1_000_000)}M`;
  if (v >= 1000) return `${fmt(v / 1000)}k`;
  return fmt(v);
}

/** A duration in ms on an axis or in a summary: 0.4 ms, 12 ms, 1.5 s, 2.5 min, 1.2 h. */
export function formatMs(v: number): string {
  if (v < 1000) return `${v < 10 ? fmt(v) : Math.round(v)} ms`;
  if (v < 60_000) return `${fmt(v / 1000)} s`;
  if (v < 3_600_000) return `${fmt(v / 60_000)} min`;
  return `${fmt(v / 3_600_000)} h`;
}

/** A step length as a unit's denominator: `min`, `5 min`, `h`. */
export function perStep(stepMs: number): string {
  if (stepMs === 60_000) return 'min';
  if (stepMs === 3_600_000) return 'h';
  return stepMs % 3_600_000 === 0 ? `${stepMs / 3_600_000} h` : `${stepMs / 60_000} min`;
}
