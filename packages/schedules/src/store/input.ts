import type { Catalog } from '@tickwork/core';
import type { AnyJob } from '@tickwork/core';
import { JobDefinitionError } from '@tickwork/core';
import { assertPayloadSize, validatePayload } from '@tickwork/core';
import { ruleOf } from '../rules/occurrences.js';
import { policiesOf } from '@tickwork/core';
import { validateSchedule } from '@tickwork/core';
import type { ScheduleInput } from './api.js';
import { encodeCore, MAX_HISTORY_CAP, policyFields, RUNTIME_HISTORY_CAP, type DefCore } from './definition.js';
import { CatalogScheduleError, InvalidScheduleError, ScheduleIdError } from '../errors.js';

export const MAX_SCHEDULE_ID_LENGTH = 200;
/** Schedule data is stored once per schedule and copied into every run: kept well under a job's limit. */
export const MAX_SCHEDULE_DATA_BYTES = 16 * 1024;

// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Throws ScheduleIdError unless `id` can name a runtime schedule. */
export function checkScheduleId(catalog: Catalog, id: string): void {
  if (typeof id !== 'string' || id.length === 0) throw new ScheduleIdError(String(id), 'must be a non-empty string, e.g. "reports.weekly:user-42"');
  if (id.length > MAX_SCHEDULE_ID_LENGTH) throw new ScheduleIdError(id, `is ${id.length} characters; at most ${MAX_SCHEDULE_ID_LENGTH}`);
  if (CONTROL.test(id)) throw new ScheduleIdError(id, 'contains a control character (newline, tab...); use printable characters');
  if (catalog.get(id)?.schedule) throw new CatalogScheduleError(id, 'upsert');
}

/**
 * Validates everything a runtime schedule needs before anything is stored, reusing the catalog's rules
 * (validateSchedule, policiesOf, ruleOf, the job's schema): unknown job -> UnknownJobError, bad data ->
 * PayloadValidationError, bad pattern/tz/policy -> InvalidScheduleError naming the field.
 */
export function coreFromInput(catalog: Catalog, id: string, input: ScheduleInput): { job: AnyJob; core: DefCore; coreJson: string } {
  checkScheduleId(catalog, id);
  const job = catalog.require(typeof input.job === 'string' ? input.job : input.job.name);
  // A batch's runs keep no occurrence history and no overlap guard, so a schedule could not keep its promises.
  if (job.batch) throw new InvalidScheduleError(id, `job ${job.name} is a batch job (defineBatchJob), and batch jobs cannot be scheduled: schedule an ordinary job that enqueues it`);
  const data = validatePayload(job, input.data ?? {});
  assertPayloadSize(job.name, data, MAX_SCHEDULE_DATA_BYTES);
  const spec = { ...input, job: undefined, data: undefined } as unknown as Parameters<typeof validateSchedule>[1];
  let core: DefCore;
  try {
    validateSchedule(id, spec);
    const rule = ruleOf(id, spec);
    core = {
      j: job.name,
      ...(rule.kind === 'cron' ? { p: rule.pattern } : { e: rule.everyMs }),
      z: spec.tz,
      ...(data !== undefined && Object.keys(data as object).length > 0 && { d: data }),
      ...policyFields(policiesOf(id, spec)),
    };
  } catch (err) {
    if (err instanceof JobDefinitionError) throw new InvalidScheduleError(id, err.message.replace(/^job "[^"]*": /, ''));
    throw err;
  }
  if (input.watch !== undefined && typeof input.watch !== 'boolean') throw new InvalidScheduleError(id, 'watch must be true or false');
  if (input.watch) core.W = 1;
  if (input.history !== undefined) {
    if (!Number.isInteger(input.history) || input.history < 1 || input.history > MAX_HISTORY_CAP) {
      throw new InvalidScheduleError(id, `history ${JSON.stringify(input.history)} must be an integer from 1 to ${MAX_HISTORY_CAP}`);
    }
    if (input.history !== RUNTIME_HISTORY_CAP) core.h = input.history;
  }
  return { job, core, coreJson: encodeCore(core) };
}
