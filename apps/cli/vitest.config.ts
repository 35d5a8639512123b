// Shared settings, three test files at a time (packages/testkit/src/vitest-config.ts).
export { threeFilesAtATime as default } from '../../packages/testkit/src/vitest-config.ts';
