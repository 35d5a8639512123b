export * from './reconcile.js';
export * from './env.js';
export * from './tick.js';
export * from './speedup.js';
