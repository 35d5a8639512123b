// Shared settings (src/vitest-config.ts), with two test files at a time: these tests mostly wait on real
// app processes, private Redis servers and a private Redis Cluster, and vitest's default on a 2-core
// machine (cores - 1) would run its files one after another.
import shared from './src/vitest-config.ts';

export default { ...shared, test: { ...shared.test, maxWorkers: 2 } };
