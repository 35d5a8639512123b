export * from './reconcile.js';
export * from './env.js';
