// Shared settings, two test files at a time (packages/testkit/src/vitest-config.ts).
export { twoFilesAtATime as default } from '../../packages/testkit/src/vitest-config.ts';
