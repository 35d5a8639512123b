export { BatchRunner } from './batch/batch-runner.js';
export { startCancelListener } from './cancel-listener.js';
export { createProcessor } from './processor.js';
export { createRecovery } from './recovery/recovery.js';
export type { Recovery } from './recovery/recovery.js';
export { soleDeliveryCheck } from './recovery/sole-delivery.js';
export { RunningJobs } from './running-jobs.js';
export { startWorkerPool } from './worker-pool.js';
export type { WorkerPool } from './worker-pool.js';
