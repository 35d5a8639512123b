/**
 * `pnpm bench:zones`: tickwork's occurrence engine against a reference that uses only Intl (no luxon, no
 * cron-parser), over every zone Node knows (Intl.supportedValuesOf('timeZone')) and every offset change
 * from 1969 to 2100, for every case of ZONE_CASES (minute steps, hourly, daily at the times that fall in
 * gaps and folds, several times a day, weekly, monthly, `every`) under the 4 DST policies. Each zone also
 * gets two quiet windows (no change), so zones that never change are compared too.
 *
 * Prints the counts and MET / NOT MET against "0 disagreements". One process, one core: run it with
 * `nice`, it takes minutes. Env: BENCH_ZONES (a comma list of zones instead of all), BENCH_ZONES_VERIFY_EVERY
 * (8: one regular reference run in 8, and every other run, is read back with Intl directly).
 * Progress goes to stderr, the report to stdout.
 */
import { cpus, loadavg } from 'node:os';
import { addTotals, checkAround, emptyTotals, scanZone, SPAN, transitionsBetween, ZONE_CASES, DST_POLICIES, type Timeline, type ZoneTransition } from '@tickwork/schedules/zones-check';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Quiet instants every zone is also checked at (the windows need not be free of changes; most are). */
const QUIET = [Date.UTC(2001, 5, 15, 12), Date.UTC(2088, 0, 15, 12)];

interface Shapes {
  foldsAcrossMidnight: number;
  gapsToMidnight: number;
  skippedDates: number;
  notWholeHours: number;
  closest: { days: number; where: string };
}

/** Tallies the changes that make zones hard (reported, so the figure says what was covered). */
function tally(zone: string, changes: readonly ZoneTransition[], shapes: Shapes): void {
  for (const [i, tr] of changes.entries()) {
    const wallBefore = tr.at + tr.before;
    const wallAfter = tr.at + tr.after;
    if (tr.after < tr.before && Math.floor(wallAfter / DAY_MS) !== Math.floor((wallBefore - 1) / DAY_MS)) shapes.foldsAcrossMidnight++;
    if (tr.after > tr.before && Math.floor(wallBefore / DAY_MS) !== Math.floor(wallAfter / DAY_MS)) shapes.gapsToMidnight++;
    if (tr.after > tr.before && Math.ceil(wallBefore / DAY_MS) < Math.floor(wallAfter / DAY_MS)) shapes.skippedDates++;
    if ((tr.after - tr.before) % HOUR_MS !== 0) shapes.notWholeHours++;
    const previous = changes[i - 1];
    if (previous && (tr.at - previous.at) / DAY_MS < shapes.closest.days) {
      shapes.closest = { days: (tr.at - previous.at) / DAY_MS, where: `${zone} ${new Date(previous.at).toISOString().slice(0, 10)}` };
    }
  }
}

function quietWindows(tl: Timeline): ZoneTransition[] {
  return QUIET.map((at) => {
    const offset = tl.zone.offsetMs(at);
    return { at, before: offset, after: offset };
  });
}

const n = (x: number) => x.toLocaleString('en-US');

function main(): void {
  const zones = process.env.BENCH_ZONES ? process.env.BENCH_ZONES.split(',').map((z) => z.trim()).filter(Boolean) : Intl.supportedValuesOf('timeZone');
  const verifyEvery = Number(process.env.BENCH_ZONES_VERIFY_EVERY ?? 8);
  if (!Number.isInteger(verifyEvery) || verifyEvery < 1) throw new Error('BENCH_ZONES_VERIFY_EVERY must be an integer >= 1');
  const load0 = loadavg();
  const started = Date.now();
  const totals = emptyTotals();
  const shapes: Shapes = { foldsAcrossMidnight: 0, gapsToMidnight: 0, skippedDates: 0, notWholeHours: 0, closest: { days: Infinity, where: '' } };
  let changes = 0;
  let quiet = 0;
  let lastReport = started;
  for (const [i, zone] of zones.entries()) {
    const tl = scanZone(zone);
    const inSpan = transitionsBetween(tl, SPAN.from, SPAN.to);
    tally(zone, inSpan, shapes);
    changes += inSpan.length;
    const windows = [...inSpan, ...quietWindows(tl)];
    quiet += windows.length - inSpan.length;
    for (const tr of windows) addTotals(totals, checkAround(tl, tr, ZONE_CASES, { verify: true, verifyEvery }));
    if (Date.now() - lastReport > 30_000 || i === zones.length - 1) {
      lastReport = Date.now();
      const minutes = (Date.now() - started) / 60_000;
      process.stderr.write(
        `bench:zones: ${i + 1}/${zones.length} zones (${zone}), ${n(changes)} changes, ${n(totals.occurrences)} occurrences, ` +
          `${n(totals.disagreements)} disagreements, ${minutes.toFixed(1)} min\n`,
      );
    }
  }
  const load1 = loadavg();
  const minutes = (Date.now() - started) / 60_000;
  const met = totals.disagreements === 0 && totals.dailyBreaks === 0 && totals.referenceMisfits === 0 && totals.windows > 0;
  const rows: Array<[string, string]> = [
    ['zones', n(zones.length)],
    ['offset changes 1969-2100', `${n(changes)} (+ ${n(quiet)} quiet windows)`],
    [
      '  of which',
      `${n(shapes.foldsAcrossMidnight)} folds across midnight, ${n(shapes.gapsToMidnight)} gaps running to midnight or past it, ` +
        `${n(shapes.skippedDates)} skipping a whole date, ${n(shapes.notWholeHours)} not a whole hour`,
    ],
    ['closest two changes of a zone', `${shapes.closest.days.toFixed(1)} days (${shapes.closest.where})`],
    ['cases x DST policies', `${ZONE_CASES.length} x ${DST_POLICIES.length}`],
    ['windows compared', n(totals.windows)],
    ['occurrences compared', n(totals.occurrences)],
    ['disagreements', `${n(totals.disagreements)} (in ${n(totals.windowsDisagreeing)} windows)`],
    ['daily cases: dates without exactly one run', n(totals.dailyBreaks)],
    ['reference runs Intl reads otherwise', n(totals.referenceMisfits)],
    ['engine labels', Object.entries(totals.kinds).map(([kind, count]) => `${kind} ${n(count)}`).join(', ')],
    ['time', `${minutes.toFixed(1)} min`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(
    `tickwork bench:zones: occurrence engine vs an Intl-only reference; Node ${process.version}, ICU ${process.versions.icu}, ` +
      `tzdata ${process.versions.tz ?? '?'}; ${cpus().length} CPUs, load average ${load0[0]?.toFixed(2)} at start, ${load1[0]?.toFixed(2)} at end\n\n`,
  );
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  for (const s of totals.samples) process.stdout.write(`  ${s}\n`);
  process.stdout.write(`\n0 disagreements over every zone and offset change 1969-2100: ${met ? 'MET' : 'NOT MET'}\n`);
  if (!met) process.exitCode = 1;
}

main();
