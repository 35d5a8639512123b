import { z } from 'zod';
import { fieldIssues, InvalidJobOptionError } from '../errors.js';

/**
 * Milliseconds since the epoch that make a valid Date. Outside ±8.64e15 `new Date(ms)` is an Invalid Date
 * whose toISOString throws a RangeError far from the cause, so the value is refused where it is read.
 */
export const epochMs = z.number().int().min(-8.64e15).max(8.64e15);

/** The Date of `ms`, or undefined when it is not a valid epoch time. */
export function dateFromMs(ms: unknown): Date | undefined {
  return epochMs.safeParse(ms).success ? new Date(ms as number) : undefined;
}

/**
 * Reads one of tickwork's own BullMQ job options (stored verbatim by BullMQ, so a job added by hand or by
 * another tool may hold anything there): undefined when absent, the parsed value, or an error naming the
 * option and each bad field. Validated with zod like payloads are.
 */
export function readJobOption<S extends z.ZodType>(opts: unknown, option: string, schema: S): z.output<S> | InvalidJobOptionError | undefined {
  if (typeof opts !== 'object' || opts === null) return undefined;
  const raw = (opts as Record<string, unknown>)[option];
  if (raw === undefined) return undefined;
  const parsed = schema.safeParse(raw);
  return parsed.success ? parsed.data : new InvalidJobOptionError(option, fieldIssues(parsed.error.issues));
}

/** The parsed value of a lenient read: a malformed option counts as absent. */
export function validOrUndefined<T>(read: T | InvalidJobOptionError | undefined): T | undefined {
  return read instanceof InvalidJobOptionError ? undefined : read;
}
