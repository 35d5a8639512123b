export * from './free-port.js';
export * from './wait-for.js';
export * from './redis-server.js';
export * from './app-process.js';
export * from './paths.js';
export * from './kubernetes.js';
export * from './postgres-server.js';
export * from './dlq-fill.js';
