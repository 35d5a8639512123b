// Shared settings: see src/vitest-config.ts.
export { default } from './src/vitest-config.ts';
