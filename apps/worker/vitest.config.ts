// Shared settings: see packages/testkit/src/vitest-config.ts.
export { default } from '../../packages/testkit/src/vitest-config.ts';
