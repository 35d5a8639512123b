/**
 * The libraries' tests (packages/*, not the apps nor the whole-stack tests of packages/e2e) in one vitest
 * run, as `pnpm test` runs them: one start for all of them, two files at a time. Each package's own
 * `pnpm test` (its vitest.config.ts) runs the same files with the same settings.
 */
import shared from './packages/testkit/src/vitest-config.ts';

export default {
  test: {
    ...shared.test,
    include: ['packages/{core,schedules,exactly-once,operations,bullmq-engine,jobs,testkit}/src/**/*.test.ts'],
    maxWorkers: 2,
  },
};
