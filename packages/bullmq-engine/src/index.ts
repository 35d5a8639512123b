export { ackBatchesSent, foldAcks } from './ack/ack-fold.js';
export { COMPLETE_BATCH, FAIL_BATCH, FETCH_BATCH, RECLAIM_BATCHES } from './batch/batch-lua.js';
export { ackConnectionOf } from './worker/ack-connection.js';
export { DeliveredJob } from './worker/delivered-job.js';
export { TickworkWorker } from './worker/tickwork-worker.js';
