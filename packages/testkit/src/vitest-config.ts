/**
 * The vitest settings every package shares (each package's vitest.config.ts re-exports this), so
 * `pnpm test` and a plain `npx vitest run` in a package behave alike.
 */
const shared = {
  test: {
    include: ['src/**/*.test.ts'],
    // Tests start redis-server and real app processes; on a loaded 2-core CI machine that takes seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
};

export default shared;

/**
 * The shared settings with two test files at a time, for the apps: their tests mostly wait on real app
 * processes (a headless browser too, for the dashboard) and private Redis servers, and vitest's default on
 * a 2-core machine (cores - 1) would run their files one after another.
 */
export const twoFilesAtATime = { ...shared, test: { ...shared.test, maxWorkers: 2 } };
