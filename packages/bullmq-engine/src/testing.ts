/**
 * Internals for tests and the bench only (`@tickwork/bullmq-engine/testing`), never for the apps: the fast
 * paths' parts a test drives directly, and a filler that writes a large dead-letter queue straight into
 * BullMQ's layout.
 */
export { ackBatchesSent, foldAcks } from './ack/ack-fold.js';
export { ackConnectionOf } from './worker/ack-connection.js';
export { TickworkWorker } from './worker/tickwork-worker.js';
export { createFastBatchStore } from './batch/fast-batch-store.js';
export { createPublicBatchStore } from './batch/public-batch-store.js';
export { fillDeadLetters, filledEntryOf } from './dlq-fill.js';
export type { FillOptions } from './dlq-fill.js';
