export * from './api.js';
export * from './errors.js';
export { createSchedules, ScheduleConflictError, type ScheduleStoreOptions } from './store.js';
export * from './keys.js';
export * from './definition.js';
export { MAX_SCHEDULE_ID_LENGTH, MAX_SCHEDULE_DATA_BYTES, checkScheduleId } from './input.js';
export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from './list.js';
export { readState, ensureShards, type ScheduleState as StoredScheduleState } from './store-keys.js';
