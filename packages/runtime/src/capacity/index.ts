export * from './classify.js';
export * from './memory-info.js';
export * from './estimate.js';
export * from './report.js';
export * from './metrics.js';
export * from './format.js';
