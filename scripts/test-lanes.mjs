#!/usr/bin/env node
/**
 * `pnpm test`'s checks after the build, in two lanes that run side by side on a machine with 4 cores or
 * more, each one suite after another:
 *
 *   lane 1: worker → dashboard
 *   lane 2: type check → libraries → e2e → scheduler → cli
 *
 * Why two lanes, and these: most of the apps' tests wait (on leases, kills, failovers, real processes)
 * rather than compute, so a machine with cores to spare runs two suites at once. Two suites at a time
 * chosen by turbo put the dashboard's browser tests beside the worker's chaos tests; here the heaviest two
 * (the worker's, then the dashboard's browser tests) share a lane, so they never run together. With one
 * lane the order is ONE_LANE: the type check first, so a type error is reported before the long suites.
 *
 * Every suite runs, whatever another's outcome (one failure does not hide the next); each line of its
 * output is prefixed with its name; the end prints, for each suite that failed, its failure lines again
 * (CI shows only the tail of a long log), then each suite's time and outcome; the exit code is 1 if any
 * failed. With fewer than 4 cores everything runs in one lane, one suite after another (below).
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** name, working directory (from the repo root), command. */
const SUITES = {
  worker: ['apps/worker', ['pnpm', 'run', 'test']],
  dashboard: ['apps/dashboard', ['pnpm', 'run', 'test']],
  typecheck: ['.', ['pnpm', 'exec', 'tsc', '-p', 'tsconfig.check.json']],
  libraries: ['.', ['pnpm', 'exec', 'vitest', 'run', '--config', 'vitest.libraries.config.ts']],
  e2e: ['packages/e2e', ['pnpm', 'run', 'test']],
  scheduler: ['apps/scheduler', ['pnpm', 'run', 'test']],
  cli: ['apps/cli', ['pnpm', 'run', 'test']],
};
const LANES = [
  ['worker', 'dashboard'],
  ['typecheck', 'libraries', 'e2e', 'scheduler', 'cli'],
];

const started = Date.now();
const children = new Set();
// A runner stopped (CI's timeout, Ctrl-C) stops its suites: they would otherwise run on, orphaned.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exit(1);
  });
}
const secs = (ms) => `${Math.round(ms / 1000)} s`;

/**
 * What names a failure in vitest's output: a failed file or test, an assertion, an error, the test source
 * line it points at, a timeout. Kept per suite and printed again at the end for a failed one.
 */
const FAILURE_LINE = /(^| )(FAIL|×|✗)( |$)|Error\b|expected|Timed out|timed out|❯ .*\.test\.ts:\d+|Unhandled/;
const MAX_DIGEST_LINES = 60;
const failureLines = new Map();

/** Runs one suite, its output prefixed line by line; resolves with its exit code and time. */
function run(name) {
  const [cwd, [cmd, ...args]] = SUITES[name];
  const prefix = `[${name}] `;
  const t = Date.now();
  process.stdout.write(`${prefix}started at ${secs(t - started)}\n`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: join(root, cwd), stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    children.add(child);
    child.on('close', () => children.delete(child));
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        if (lines.length > 0) process.stdout.write(lines.map((l) => prefix + l).join('\n') + '\n');
        const kept = failureLines.get(name) ?? [];
        // Without ANSI colour codes: the pattern sees the text, and the digest reads as plain text.
        for (const line of lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''))) if (FAILURE_LINE.test(line)) kept.push(line);
        failureLines.set(name, kept);
      });
      stream.on('end', () => rest && process.stdout.write(prefix + rest + '\n'));
    }
    child.on('error', (err) => resolve({ name, code: 1, ms: Date.now() - t, err }));
    child.on('close', (code, signal) => resolve({ name, code: code ?? (signal ? 1 : 0), ms: Date.now() - t }));
  });
}

async function lane(names) {
  const results = [];
  for (const name of names) results.push(await run(name));
  return results;
}

/**
 * Two lanes only where there are cores for them. On a 2-core machine two lanes finished in about 10 minutes
 * instead of 14, but kept its load near 11, and in two of four runs a different timing-bound test failed
 * each time (a scheduler's set-up outlasting its second, a Redis AOF postponed past a kill, a stalled run
 * not dead-lettered in 150 s, a CLI's 31 s budget against two frozen masters): one lane there.
 * TEST_LANES=1 or 2 chooses.
 */
const asked = process.env.TEST_LANES;
if (asked !== undefined && asked !== '' && asked !== '1' && asked !== '2') {
  process.stderr.write(`TEST_LANES must be 1 or 2 (or unset: two lanes with 4 cores or more), got ${JSON.stringify(asked)}\n`);
  process.exit(1);
}
const laneCount = asked ? Number(asked) : availableParallelism() >= 4 ? 2 : 1;
const ONE_LANE = ['typecheck', 'libraries', 'worker', 'dashboard', 'e2e', 'scheduler', 'cli'];
const lanes = laneCount >= 2 ? LANES : [ONE_LANE];
const results = (await Promise.all(lanes.map(lane))).flat();
for (const r of results.filter((r) => r.code !== 0)) {
  const kept = failureLines.get(r.name) ?? [];
  process.stdout.write(`\n${r.name} failed; its failure lines (${Math.min(kept.length, MAX_DIGEST_LINES)} of ${kept.length}):\n`);
  for (const line of kept.slice(0, MAX_DIGEST_LINES)) process.stdout.write(`  ${line}\n`);
}
process.stdout.write(`\ntest lanes: ${lanes.map((l) => l.join(' → ')).join('  |  ')}\n`);
for (const r of results) process.stdout.write(`  ${r.name.padEnd(10)} ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code}${r.err ? `: ${r.err.message}` : ''})`} in ${secs(r.ms)}\n`);
process.stdout.write(`  all ${secs(Date.now() - started)}\n`);
process.exitCode = results.every((r) => r.code === 0) ? 0 : 1;
