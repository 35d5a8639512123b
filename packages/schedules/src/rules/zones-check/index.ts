/**
 * The zone check's harness (`@tickwork/schedules/zones-check`): an occurrence reference that uses only Intl,
 * and its comparison with the engine, for `pnpm bench:zones` and the sample in zones.property.test.ts.
 */
export { DST_POLICIES, ZONE_CASES } from './cases.js';
export type { ZoneCase } from './cases.js';
export { addTotals, checkAround, emptyTotals, scanZone, SPAN, transitionsBetween } from './compare.js';
export type { CheckOptions, ZoneTotals } from './compare.js';
export { IntlZone, scanTimeline } from './intl-zone.js';
export type { Timeline, ZoneTransition } from './intl-zone.js';
export { parseReferenceCron } from './reference-cron.js';
export { referenceBetween } from './reference.js';
export type { ReferenceOccurrence, ReferenceRule } from './reference.js';
