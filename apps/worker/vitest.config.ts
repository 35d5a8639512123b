// Shared settings (packages/testkit/src/vitest-config.ts), with two test files at a time: this package's
// tests mostly wait on real app processes and private Redis servers, and vitest's default on a
// 2-core machine (cores - 1) would run its files one after another. The crash tests take 50-100 s each:
// they start first, so the short files fill the other worker meanwhile.
import shared, { slowFilesFirst } from '../../packages/testkit/src/vitest-config.ts';

export default {
  ...shared,
  test: {
    ...shared.test,
    maxWorkers: 2,
    sequence: { sequencer: slowFilesFirst(['src/redis-step-crash.test.ts', 'src/pg/pg-billing-crash.test.ts', 'src/billing-crash.test.ts', 'src/recovery.test.ts', 'src/exactly-once.test.ts']) },
  },
};
