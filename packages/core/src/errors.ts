import type { $ZodIssue } from 'zod/v4/core';

/** Thrown by a handler: the job fails at once, without further attempts (BullMQ's own class, re-exported so jobs need no bullmq dependency). */
export { UnrecoverableError } from 'bullmq';

/**
 * Named errors, so callers can branch on `instanceof` and operators get a message that says what is wrong
 * and how to fix it.
 */
export class TickworkError extends Error {
  override name = 'TickworkError';
}

/** One bad field of a validated value: where (dotted path, '' for the root) and what is wrong. */
export interface FieldIssue {
  path: string;
  message: string;
}

export function fieldIssues(issues: readonly $ZodIssue[]): FieldIssue[] {
  return issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
}

/** `a.b: message; (root): message`: one line naming every bad field. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ');
}

/** An env variable is missing or malformed. The message names each variable. */
export class EnvError extends TickworkError {
  override name = 'EnvError';
  constructor(
    readonly app: string,
    readonly problems: readonly string[],
  ) {
    super(`${app}: invalid environment:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** A payload does not match its job's schema. `issues` names each bad field. */
export class PayloadValidationError extends TickworkError {
  override name = 'PayloadValidationError';
  constructor(
    readonly jobName: string,
    readonly issues: readonly FieldIssue[],
  ) {
    super(`invalid payload for job "${jobName}": ${describeIssues(issues)}`);
  }
}

/**
 * One of tickwork's own job options (the occurrence marker, the re-drive meta) is malformed: a job
 * added by hand or by another tool. Like an invalid payload it can never succeed, so the worker fails it
 * for good and the DLQ entry's reason names the option and each bad field.
 */
export class InvalidJobOptionError extends TickworkError {
  override name = 'InvalidJobOptionError';
  constructor(
    readonly option: string,
    readonly issues: readonly FieldIssue[],
  ) {
    super(`invalid job option ${option}: ${describeIssues(issues)}`);
  }
}

export class PayloadTooLargeError extends TickworkError {
  override name = 'PayloadTooLargeError';
  constructor(
    readonly jobName: string,
    readonly bytes: number,
    readonly limitBytes: number,
  ) {
    super(
      `payload for job "${jobName}" is ${bytes} bytes, over the ${limitBytes}-byte limit; ` +
        'store large data elsewhere (object storage, a database) and pass a reference',
    );
  }
}

export class UnknownJobError extends TickworkError {
  override name = 'UnknownJobError';
  constructor(
    readonly jobName: string,
    known: readonly string[],
  ) {
    super(`unknown job "${jobName}"; known jobs: ${known.join(', ') || '(none)'}`);
  }
}

/** A job definition is wrong (bad cron pattern, unknown timezone, duplicate name...). */
export class JobDefinitionError extends TickworkError {
  override name = 'JobDefinitionError';
  constructor(
    readonly jobName: string,
    detail: string,
  ) {
    super(`job "${jobName}": ${detail}`);
  }
}
