import type { z } from 'zod';
import type { AnyJob } from './define-job.js';
import { fieldIssues, PayloadTooLargeError, PayloadValidationError } from '../errors.js';

export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024;

/** Parses data with the job's schema; the error names every bad field. */
export function validatePayload<J extends AnyJob>(job: J, data: unknown): z.output<J['schema']> {
  const result = job.schema.safeParse(data);
  if (result.success) return result.data;
  throw new PayloadValidationError(job.name, fieldIssues(result.error.issues));
}

export function assertPayloadSize(jobName: string, data: unknown, limitBytes = DEFAULT_MAX_PAYLOAD_BYTES): void {
  const bytes = Buffer.byteLength(JSON.stringify(data) ?? '', 'utf8');
  if (bytes > limitBytes) throw new PayloadTooLargeError(jobName, bytes, limitBytes);
}
