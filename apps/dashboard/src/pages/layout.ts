import { html, raw, type HtmlValue, type SafeHtml } from '../html.js';
import { AUTO_REFRESH_SCRIPT, AUTO_REFRESH_TOGGLE } from './auto-refresh.js';

export type Section = 'overview' | 'schedules' | 'dead-letters' | 'capacity' | 'jobs' | 'audit' | 'processes' | 'find';

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

const NAV: { href: string; label: string; section?: Section }[] = [
  { href: '/overview', label: 'Overview', section: 'overview' },
  { href: '/schedules', label: 'Schedules', section: 'schedules' },
  { href: '/dead-letters', label: 'Dead letters', section: 'dead-letters' },
  { href: '/capacity', label: 'Capacity', section: 'capacity' },
  { href: '/jobs', label: 'Running', section: 'jobs' },
  { href: '/processes', label: 'Processes', section: 'processes' },
  { href: '/audit', label: 'Audit', section: 'audit' },
  { href: '/queues', label: 'Queues' },
];

// A constant: no data flows into it.
const STYLE = raw(`
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2430; background: #f6f7f9; }
  header { background: #1d2430; padding: 0 24px; display: flex; gap: 24px; align-items: center; }
  header .brand { color: #fff; font-weight: 600; padding: 12px 0; }
  header a { color: #c6cdd8; text-decoration: none; padding: 12px 0; border-bottom: 3px solid transparent; }
  header a.active, header a:hover { color: #fff; border-bottom-color: #5b9dff; }
  main { padding: 16px 20px 48px; }
  .scroll { overflow-x: auto; }
  h1 { font-size: 20px; margin: 8px 0 16px; }
  h2 { font-size: 16px; margin: 24px 0 8px; }
  table { border-collapse: collapse; background: #fff; width: 100%; margin-bottom: 16px; }
  th, td { text-align: left; vertical-align: top; padding: 6px 7px; border-bottom: 1px solid #e3e6eb; }
  th { background: #eef0f4; font-weight: 600; white-space: nowrap; }
  td.num { text-align: right; }
  code, pre { font: 12px/1.4 ui-monospace, monospace; }
  pre { background: #fff; border: 1px solid #e3e6eb; padding: 8px; overflow: auto; max-height: 480px; }
  .muted { color: #6b7482; }
  .err { color: #a11d1d; }
  .badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; font-weight: 600; white-space: nowrap; }
  .ok { background: #dff3e4; color: #17612c; }
  .failing { background: #fbe0e0; color: #a11d1d; }
  .stale { background: #fdf0d5; color: #7a5200; }
  .waiting, .neutral { background: #e8ebf0; color: #4a5260; }
  .flash { padding: 8px 12px; border-radius: 4px; margin-bottom: 16px; }
  .flash.ok { border: 1px solid #9fd3ad; }
  .flash.error { background: #fbe0e0; border: 1px solid #e3a3a3; color: #a11d1d; }
  .fires { margin: 0; padding: 0; list-style: none; white-space: nowrap; }
  .nowrap, time { white-space: nowrap; }
  td.wrap { max-width: 240px; overflow-wrap: anywhere; }
  .dst { color: #7a5200; font-weight: 600; }
  form.inline { display: inline; margin: 0; }
  button { font: inherit; padding: 3px 10px; cursor: pointer; }
  button.danger { color: #a11d1d; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; padding: 12px; border: 1px solid #e3e6eb; }
  dt { font-weight: 600; }
  dd { margin: 0; }
  header form.find { margin-left: auto; display: flex; gap: 6px; }
  div.bulk { display: flex; flex-wrap: wrap; gap: 6px 12px; align-items: baseline; margin-bottom: 8px; }
  header label.refresh { color: #c6cdd8; white-space: nowrap; }
  header form.find input { font: inherit; padding: 3px 8px; width: 22em; max-width: 40vw; }
  ol.trail { background: #fff; border: 1px solid #e3e6eb; padding: 8px 8px 8px 32px; }
  figure.chart { margin: 0 0 16px; }
  h3 { font-size: 14px; margin: 16px 0 4px; }
`);

/** The search box of every page: a GET form, so a search is a link and changes nothing. */
const FIND_FORM = raw(
  '<form class="find" method="get" action="/find" role="search"><input type="search" name="id" placeholder="Job, dead-letter or schedule id" aria-label="Find by id" maxlength="512" required><button type="submit">Find</button></form>',
);

/** The page frame: nav (Overview, Schedules, Dead letters, Capacity, Running, Processes, Audit, Queues = Bull Board) and the search box, an optional flash message, the body. */
export function layout(opts: { title: string; section?: Section; flash?: Flash | undefined; body: HtmlValue }): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title} · tickwork</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <span class="brand">tickwork</span>
  ${NAV.map((n) => html`<a href="${n.href}" class="${n.section && n.section === opts.section ? 'active' : ''}">${n.label}</a>`)}
  ${FIND_FORM}
  ${AUTO_REFRESH_TOGGLE}
</header>
<main>
${opts.flash && html`<div class="flash ${opts.flash.kind}" role="status">${opts.flash.text}</div>`}
${opts.body}
</main>
${AUTO_REFRESH_SCRIPT}
</body>
</html>
`;
}

/**
 * The one way a time is written on every page: `2026-12-06 06:28:02 UTC`, and a schedule's local time as
 * `2026-03-08 03:30:00 UTC-04:00` (the offset from UTC, never a zone abbreviation or a 12-hour clock);
 * Bull Board is configured to match (UTC, 24-hour: app.ts). '-' when absent.
 */
export function time(iso: string | null | undefined): SafeHtml {
  if (!iso) return html`<span class="muted">-</span>`;
  return html`<time datetime="${iso}">${timeText(iso)}</time>`;
}

/** `timeText('2026-03-08T03:30:00.000-04:00')` is `2026-03-08 03:30:00 UTC-04:00`; a `Z` time ends in ` UTC`. */
export function timeText(iso: string): string {
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d(?::\d\d)?)(?:\.\d+)?(Z|[+-]\d\d:\d\d)?$/.exec(iso);
  if (!m) return iso;
  return `${m[1]} ${m[2]} ${offsetLabel(m[3] ?? 'Z')}`;
}

/** `Z` or `+00:00` is `UTC`; any other offset `UTC+05:45`. */
export function offsetLabel(offset: string): string {
  return offset === 'Z' || offset === '+00:00' || offset === '-00:00' ? 'UTC' : `UTC${offset}`;
}

/** An elapsed time or offset to the second, in its two largest units: `45s`, `4m 12s`, `1h 4m`, `2d 3h`. */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const parts: [number, string][] = [
    [Math.floor(s / 86_400), 'd'],
    [Math.floor((s % 86_400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'm'],
    [s % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  if (first < 0) return '0s';
  return parts
    .slice(first, first + 2)
    .filter(([n], i) => i === 0 || n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
}

/** A duration in the largest unit that fits it exactly enough for an interval column. */
export function duration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  return `${ms} ms`;
}
