// Shared settings: see packages/testkit/src/vitest-config.ts.
export { default } from '../testkit/src/vitest-config.ts';
