export * from './entry.js';
export * from './ids.js';
export * from './move.js';
export * from './admin.js';
