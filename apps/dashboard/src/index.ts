export * from './app.js';
export * from './basic-auth.js';
export * from './env.js';
