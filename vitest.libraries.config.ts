/**
 * The libraries' tests (packages/*, not the apps nor the whole-stack tests of packages/e2e) in one vitest
 * run, as `pnpm test` runs them: one start for all of them, two files at a time. Each package's own
 * `pnpm test` (its vitest.config.ts) runs the same files with the same settings.
 *
 * Files share their worker's modules (testkit's vitest-config.ts, `isolate: false`), so every
 * `@tickwork/<package>` import here resolves to that package's source, as the tests' own relative imports
 * do: one copy of each module, and of each metric it registers (a package's tests import its source, its
 * dependents' tests its build: two copies would register the same metric twice).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import shared from './packages/testkit/src/vitest-config.ts';

const packages = join(dirname(fileURLToPath(import.meta.url)), 'packages');

export default {
  resolve: {
    alias: [
      { find: /^@tickwork\/bullmq-engine\/testing$/, replacement: join(packages, 'bullmq-engine/src/testing.ts') },
      { find: /^@tickwork\/schedules\/zones-check$/, replacement: join(packages, 'schedules/src/rules/zones-check/index.ts') },
      { find: /^@tickwork\/([a-z-]+)$/, replacement: join(packages, '$1/src/index.ts') },
    ],
  },
  test: {
    ...shared.test,
    include: ['packages/{core,schedules,exactly-once,operations,bullmq-engine,jobs,testkit}/src/**/*.test.ts'],
    maxWorkers: 2,
  },
};
