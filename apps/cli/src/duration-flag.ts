import { Duration } from 'luxon';
import type { Flags } from './context.js';
import { UsageError } from './usage-error.js';

const UNITS: Record<string, 'milliseconds' | 'seconds' | 'minutes' | 'hours' | 'days'> = {
  ms: 'milliseconds',
  s: 'seconds',
  m: 'minutes',
  h: 'hours',
  d: 'days',
};

/**
 * A duration flag as a luxon duration object: `90s`, `5m`, `1h30m`, `2d` (units ms, s, m, h, d) or ISO 8601
 * (`PT30M`). Only what the shell can type without quoting; the API checks the value further (positive,
 * within its limits) and names the field when it refuses it.
 */
export function durationFlag(flags: Flags, name: string): Record<string, number> | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (/^P/i.test(text)) {
    const d = Duration.fromISO(text.toUpperCase());
    if (d.isValid) return d.toObject() as Record<string, number>;
  }
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d)/g)];
  // The parts must cover the whole text: `5 minutes` or `5x` are refused, not read as 5.
  if (text !== '' && parts.map((p) => p[0]).join('') === text) {
    const out: Record<string, number> = {};
    for (const [, amount, unit] of parts) {
      const key = UNITS[unit ?? ''];
      if (key) out[key] = (out[key] ?? 0) + Number(amount);
    }
    return out;
  }
  throw new UsageError(`--${name} must be a duration such as 30s, 5m, 1h30m, 2d or PT30M, got ${JSON.stringify(raw)}`);
}
