/**
 * @tickwork/bullmq-engine: the only package that knows BullMQ's internals. The worker makes one engine at
 * start (createEngine): it checks the installed BullMQ against the contract and runs the fast paths or
 * BullMQ's public paths only, behind this interface. Tests and the bench reach a few internals through
 * `@tickwork/bullmq-engine/testing`.
 */
export { createEngine } from './engine.js';
export type { Engine, EngineMode, EngineOptions, StallBook } from './engine.js';
export type { ContractMismatch } from './contract/check.js';
export { STALLED_REASON } from './stalls.js';
export { BatchFormatError } from './batch/batch-store.js';
export type { BatchCommit, BatchFetch, BatchJobRef, BatchStore, BatchStoreOptions, FailedAttempt, FetchedBatchJob, ForeignConsumer } from './batch/batch-store.js';
export type { PublicBatchStoreOptions } from './batch/public-batch-store.js';
export { batchForeignConsumers } from './batch/batch-metrics.js';
export { renewWorkerConnections } from './worker/renew-connections.js';
export { closeWorker } from './worker/close-worker.js';
export { onReadyCheck } from './ready-check.js';
export { consumerState } from './worker/consumer-state.js';
export type { ServerInfo } from './ready-check.js';
export { failUnreadableActive, isJobDecodeError, unreadableReason } from './unreadable.js';
export type { FailUnreadableOptions, UnreadableJob } from './unreadable.js';
export { createLiftAhead, LIFT_CHUNK } from './delayed/lift-ahead.js';
export type { LiftAhead } from './delayed/lift-ahead.js';
