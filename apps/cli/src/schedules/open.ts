import { TickworkError, type Catalog, type Schedules } from '@tickwork/runtime';
import type { Redis } from 'ioredis';

/** The schedule engine is not in this build yet (the store lands on the `engine` branch). */
export class ScheduleEngineMissingError extends TickworkError {
  override name = 'ScheduleEngineMissingError';
}

/** The runtime schedule API over the CLI's Redis: the one place the CLI builds it. */
export function openSchedules(_redis: Redis, _prefix: string, _catalog: Catalog): Schedules {
  throw new ScheduleEngineMissingError('runtime schedules need the schedule store, which this build does not have yet');
}
