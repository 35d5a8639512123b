// Shared settings: see src/vitest-config.ts. The slowest files start first (slowFilesFirst). `pnpm test`
// (package.json) runs the cluster chaos test on its own, after the rest, which run two files at a time: it
// kills masters on timers and counts repeated deliveries, so it gets the machine to itself.
import shared, { slowFilesFirst } from './src/vitest-config.ts';

export default { ...shared, test: { ...shared.test, sequence: { sequencer: slowFilesFirst(['src/e2e/readiness.test.ts', 'src/e2e/startup-errors.test.ts', 'src/redis-cluster.test.ts']) } } };
