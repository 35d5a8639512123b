import type { Flags } from './context.js';
import { UsageError } from './usage-error.js';

/**
 * An integer flag, or undefined when absent. Only plain decimal digits count: `Number()` alone would take
 * '' as 0 and '0x10' as 16. The error names the flag, the range and what was given.
 */
export function integerFlag(flags: Flags, name: string, range: { min: number; max?: number; unit?: string }): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const value = typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isSafeInteger(value) || value < range.min || value > max) {
    const bounds = range.max === undefined ? `of ${range.min} or more` : `from ${range.min} to ${range.max}`;
    throw new UsageError(`--${name} must be an integer ${bounds}${range.unit ? ` (${range.unit})` : ''}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/**
 * `--delay-ms -5`: Node's parseArgs refuses a value that starts with '-' with its own message ("argument
 * is ambiguous"). Joining it as `--delay-ms=-5` (unless it is itself a known flag) lets the command's own
 * check say what is wrong, and lets `--data -` name stdin.
 */
export function joinDashValues(argv: readonly string[], valueFlags: readonly string[], knownFlags: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const next = argv[i + 1];
    const isValueFlag = arg.startsWith('--') && valueFlags.includes(arg.slice(2));
    const nextIsFlag = next !== undefined && next.startsWith('--') && knownFlags.includes(next.slice(2).split('=')[0] ?? '');
    if (isValueFlag && next !== undefined && next.startsWith('-') && !nextIsFlag) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}
