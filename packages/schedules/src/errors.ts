import { TickworkError } from '@tickwork/core';

/** The schedule id is empty, too long, has control characters, or names a catalog schedule. */
export class ScheduleIdError extends TickworkError {
  override name = 'ScheduleIdError';
  constructor(
    readonly scheduleId: string,
    detail: string,
  ) {
    super(`schedule id ${JSON.stringify(scheduleId.slice(0, 80))}: ${detail}`);
  }
}

/** A runtime schedule's definition is wrong (pattern, tz, policies...); nothing was stored. */
export class InvalidScheduleError extends TickworkError {
  override name = 'InvalidScheduleError';
  constructor(
    readonly scheduleId: string,
    detail: string,
  ) {
    super(`schedule "${scheduleId}": ${detail}`);
  }
}

export class ScheduleNotFoundError extends TickworkError {
  override name = 'ScheduleNotFoundError';
  constructor(readonly scheduleId: string) {
    super(`no schedule "${scheduleId}"; list them with \`tickwork schedules ls\` or schedules.list()`);
  }
}

/** A catalog schedule is code: it is changed or removed by editing its job, not through the API. */
export class CatalogScheduleError extends TickworkError {
  override name = 'CatalogScheduleError';
  constructor(
    readonly scheduleId: string,
    action: string,
  ) {
    super(`schedule "${scheduleId}" is a catalog schedule (the job's \`schedule\` field); ${action} it by editing the job, not at run time`);
  }
}

/** The prefix's data was written with another SCHEDULE_SHARDS; running on would lose schedules. */
export class ScheduleShardsMismatchError extends TickworkError {
  override name = 'ScheduleShardsMismatchError';
  constructor(
    readonly recorded: number,
    readonly expected: number,
  ) {
    super(
      `this QUEUE_PREFIX's schedules are laid out in ${recorded} shards, this tickwork uses ${expected}; ` +
        'run the tickwork version that wrote them, or use another QUEUE_PREFIX',
    );
  }
}

/** A history write of a run (its start or end record) failed in Redis; the run retries it (runRecorder). */
export class HistoryWriteError extends TickworkError {
  override name = 'HistoryWriteError';
  constructor(
    readonly occurrence: string,
    reason: string,
  ) {
    super(`history of ${occurrence}: ${reason}`);
  }
}
