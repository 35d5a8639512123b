export * from './processor.js';
export * from './worker-pool.js';
export * from './run-handler.js';
export * from './errors.js';
export * from './env.js';
