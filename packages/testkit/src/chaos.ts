/**
 * How many kill -9s a crash test's main chaos case runs. `pnpm test` runs 25 a case, enough to land kills
 * between effects and records in every stage of a run within CI's time; `pnpm test:chaos` runs the same
 * cases with 100 (TICKWORK_CHAOS_KILLS=100), the figure the docs state. One knob for every chaos case, so a
 * count cannot drift between them.
 */
export const CI_KILLS = 25;

export function chaosKills(): number {
  const raw = process.env.TICKWORK_CHAOS_KILLS;
  if (raw === undefined || raw.trim() === '') return CI_KILLS;
  const kills = Number(raw);
  if (!Number.isInteger(kills) || kills < 1) throw new Error(`TICKWORK_CHAOS_KILLS must be a whole number of kills ≥ 1, got ${JSON.stringify(raw)}`);
  return kills;
}
