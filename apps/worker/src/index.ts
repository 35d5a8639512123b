export * from './processor.js';
export * from './worker-pool.js';
export * from './run-handler.js';
export * from './errors.js';
export * from './env.js';
export * from './dead-letter.js';
export * from './thrown-value.js';
export * from './recovery/recovery.js';
