import { TickworkError } from '@tickwork/runtime';

/** No schedule has this id (neither a catalog job's nor a runtime one). Exit code 1, as for any lookup that fails. */
export class ScheduleNotFoundError extends TickworkError {
  override name = 'ScheduleNotFoundError';
  constructor(readonly id: string) {
    super(`no schedule "${id}"; \`tickwork schedules ls\` lists them`);
  }
}
