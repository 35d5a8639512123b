/**
 * The vitest settings every package shares (each package's vitest.config.ts re-exports this), so
 * `pnpm test` and a plain `npx vitest run` in a package behave alike.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export default {
  test: {
    include: ['src/**/*.test.ts'],
    // Tests start redis-server and real app processes; on a loaded 2-core CI machine that takes seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
};

/**
 * A sequencer that starts the named files (paths relative to the package) first, in the order given, then
 * the rest in vitest's own order. Vitest runs the slowest files first only once its results cache knows
 * their durations; on a fresh clone (CI) it goes by file size, and a long crash test that starts last
 * keeps one worker busy after the others are done.
 */
export function slowFilesFirst(files: readonly string[]): typeof BaseSequencer {
  return class SlowFilesFirst extends BaseSequencer {
    override async sort(specs: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(specs);
      const rank = (s: TestSpecification) => {
        const i = files.findIndex((f) => s.moduleId.endsWith(`/${f}`));
        return i < 0 ? files.length : i;
      };
      return sorted.map((s, i) => ({ s, i })).sort((a, b) => rank(a.s) - rank(b.s) || a.i - b.i).map(({ s }) => s);
    }
  };
}
