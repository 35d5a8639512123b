/** Bytes in the largest binary unit that keeps the number at or above 1, e.g. `412.3 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A ratio as a percentage with one decimal, e.g. `80.4%`. */
export function formatRatio(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** An age in seconds in its largest whole unit, e.g. `3 d 4 h`, `12 min`, `40 s`. */
export function formatAge(seconds: number): string {
  const parts: string[] = [];
  let rest = Math.max(0, Math.floor(seconds));
  for (const [size, unit] of [[86_400, 'd'], [3600, 'h'], [60, 'min']] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
    if (parts.length === 2) break;
  }
  if (parts.length === 0) parts.push(`${rest} s`);
  return parts.join(' ');
}

/**
 * The sentence that says how the per-component numbers were obtained; every view shows it ("By component
 * (...)", "Shares are ..."). With no more keys than samples every key was measured, and it says so rather
 * than "2000 randomly sampled keys of 83".
 */
export function estimateNote(e: { dbKeys: number; sampledKeys: number; measuredKeys: number; allKeys: boolean }): string {
  if (e.allKeys) return `measured on all ${e.dbKeys} keys, not sampled`;
  return `estimates from ${e.sampledKeys} randomly sampled keys of ${e.dbKeys} (sizes extrapolated), plus ${e.measuredKeys} known large keys measured one by one`;
}
