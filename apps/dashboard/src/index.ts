export * from './app.js';
export * from './basic-auth.js';
export * from './env.js';
export * from './csrf.js';
export * from './html.js';
