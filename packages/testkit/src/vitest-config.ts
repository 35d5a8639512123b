/**
 * The vitest settings every package shares (each package's vitest.config.ts re-exports this), so
 * `pnpm test` and a plain `npx vitest run` in a package behave alike.
 */
export default {
  test: {
    include: ['src/**/*.test.ts'],
    // Tests start redis-server and real app processes; on a loaded 2-core CI machine that takes seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
};
