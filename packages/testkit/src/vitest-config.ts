/**
 * The vitest settings every package shares (each package's vitest.config.ts re-exports this), so
 * `pnpm test` and a plain `npx vitest run` in a package behave alike.
 */
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The tests of tickwork's fast paths into BullMQ's internals (the engine's own, and the worker's that drive
 * them), as globs under a package's folder. They hold the fast paths to what the installed BullMQ does, so
 * they only mean something while it matches the engine's contract: `pnpm test:bullmq` against a BullMQ that
 * does not (scripts/test-bullmq.sh) leaves them out (TICKWORK_FAST_PATH_TESTS=off) and runs everything else,
 * the worker then on BullMQ's public paths.
 */
export const FAST_PATH_TESTS: Record<string, readonly string[]> = {
  'packages/bullmq-engine': ['src/ack/**/*.test.ts', 'src/worker/**/*.test.ts', 'src/batch/**/*.test.ts', 'src/lua/**/*.test.ts', 'src/stalls.test.ts', 'src/contract/**/*.test.ts'],
  'apps/worker': [
    'src/exactly-once/ack-fold.test.ts',
    'src/exactly-once/sole-delivery.test.ts',
    'src/exactly-once/complete-ahead.test.ts',
    'src/exactly-once/lazy-claim.test.ts',
    'src/cluster/complete-ahead-cluster.test.ts',
  ],
};

/**
 * FAST_PATH_TESTS as globs from where vitest runs: the repository's folder (the libraries' run), or one
 * package's folder (its own run), where only that package's globs apply.
 */
const here = relative(resolve(dirname(fileURLToPath(import.meta.url)), '../../..'), process.cwd()).split(sep).join('/');
const fastPathGlobs = Object.entries(FAST_PATH_TESTS).flatMap(([pkg, globs]) => (pkg === here ? globs : globs.map((g) => `${pkg}/${g}`)));

const shared = {
  test: {
    include: ['src/**/*.test.ts'],
    // A worker process runs file after file with its modules loaded once (loading them again for each file
    // cost about a third of the apps' test time on 2 cores); what a file leaves open is closed by the setup.
    isolate: false,
    setupFiles: [fileURLToPath(new URL('./vitest-setup.ts', import.meta.url))],
    exclude: ['**/node_modules/**', ...(process.env.TICKWORK_FAST_PATH_TESTS === 'off' ? fastPathGlobs : [])],
    // Tests start redis-server and real app processes; on a loaded 2-core CI machine that takes seconds, and
    // an app's first log line has come after 30 s (app-process.ts waits 60 s for one). Guards against hangs.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
};

export default shared;

/**
 * The shared settings with two test files at a time, for the apps: their tests mostly wait on real app
 * processes (a headless browser too, for the dashboard) and private Redis servers, and vitest's default on
 * a 2-core machine (cores - 1) would run their files one after another.
 */
export const twoFilesAtATime = { ...shared, test: { ...shared.test, maxWorkers: 2 } };

/**
 * Three test files at a time, for the worker's, the scheduler's and the CLI's tests: they wait on app
 * processes, lock and lease expiries and schedules' times far more than they compute (two at a time kept
 * 1.7 files busy on average), and with three `pnpm test` fits CI's time. The dashboard's browser tests
 * stay at two.
 */
export const threeFilesAtATime = { ...shared, test: { ...shared.test, maxWorkers: 3 } };
