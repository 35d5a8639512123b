export * from './metrics.js';
export * from './webhook.js';
export * from './alerter.js';
export * from './status-swap.js';
