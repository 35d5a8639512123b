// Shared settings (packages/testkit/src/vitest-config.ts), with two test files at a time: this package's
// tests mostly wait on real app processes and private Redis servers, and vitest's default on a
// 2-core machine (cores - 1) would run its files one after another.
import shared, { slowFilesFirst } from '../../packages/testkit/src/vitest-config.ts';

// The slowest files start first (slowFilesFirst), so the short ones fill the other worker meanwhile.
export default { ...shared, test: { ...shared.test, maxWorkers: 2, sequence: { sequencer: slowFilesFirst(['src/commands/schedules-runtime.test.ts', 'src/dlq.test.ts', 'src/stats.test.ts']) } } };
