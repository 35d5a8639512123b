// Shared settings (packages/testkit/src/vitest-config.ts), with two test files at a time: this package's
// tests mostly wait on real app processes and private Redis servers, and vitest's default on a
// 2-core machine (cores - 1) would run its files one after another.
import shared from '../../packages/testkit/src/vitest-config.ts';

export default { ...shared, test: { ...shared.test, maxWorkers: 2 } };
