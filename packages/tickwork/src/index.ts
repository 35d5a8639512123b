/**
 * tickwork's API for the code that defines jobs and the application that enqueues them and schedules them
 * at run time: the one import path of packages/jobs. The apps (scheduler, worker, dashboard, CLI) import
 * the packages behind it (@tickwork/core, schedules, exactly-once, operations, bullmq-engine) directly.
 */

// Defining jobs and the catalog
export { createCatalog, defineBatchJob, defineJob, UnrecoverableError } from '@tickwork/core';
export type {
  AnyJob,
  BatchContext,
  BatchItem,
  BatchJobDefinition,
  Catalog,
  DstPolicy,
  HeldLock,
  JobContext,
  JobData,
  JobDefinition,
  JobInput,
  LockOptions,
  MissedPolicy,
  OverlapPolicy,
  RedisTx,
  RetryPolicy,
  ScheduleSpec,
  StepInfo,
} from '@tickwork/core';
export { JobDefinitionError, PayloadValidationError, TickworkError, UnknownJobError } from '@tickwork/core';

// Enqueueing, and the connections and logger an application makes
export { createEnqueue, createLogger, createRedis, QueueSet } from '@tickwork/core';
export type { Enqueue, EnqueueOptions, Logger, RedisClient } from '@tickwork/core';

// Runtime schedules (one per user, tenant, feed) and per-user timezone fan-out
export { createSchedules, localFanOutKey, readHistory, usersAtLocalTime } from '@tickwork/schedules';
export type { ScheduleInput, Schedules, UpsertResult } from '@tickwork/schedules';

// Effects once: fenced locks, PostgreSQL steps and transactional enqueue
export { createPgPool, enqueueInTransaction, fencedGet, fencedSet, migrateTickworkTables, pgStep, pruneSteps, startOutboxRelay, startStepPruner, withLock } from '@tickwork/exactly-once';
export { InvalidLockOptionsError, LeaseLostError, LockLostError, LockNotAcquiredError, StaleFencingTokenError, StepError } from '@tickwork/exactly-once';
