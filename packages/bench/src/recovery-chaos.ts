/**
 * `pnpm bench:recovery`: how soon a run whose worker process is killed -9 mid-run resumes elsewhere, with
 * the default recovery settings (WORKER_HEARTBEAT_MS 1 s, WORKER_DEAD_AFTER_MS 5 s, 30 s lock and lease),
 * under chaos (issue 37 §3). Target: p95 ≤ 10 s from the kill to the run's next effect, in each pattern.
 *
 * Per pattern: a private redis-server, three stock worker processes (apps/worker) on the bench catalog
 * (recovery-chaos/catalog.ts: a run records a step every 200 ms for about 3 s), kept topped up with runs,
 * and BENCH_RECOVERY_KILLS (100) kill -9s, each killed process restarted at once (as an orchestrator would):
 * - free slots: 4 runs at a time on 3 × 4 slots; a kill every 1.2–2 s, once every process is up (a restart
 *   that takes longer delays the next kill), of the longest-running process that holds runs and took over
 *   none still waiting to resume (the kills overlap, but are not a chain);
 * - full slots: 12 runs at a time on 3 × 2 slots (6 always waiting), killed the same way;
 * - rapid kills: 6 runs at a time on 3 × 4 slots; a kill every 0.3–1 s of any of the three processes, just
 *   restarted or not.
 * For each kill, each run the killed process held is timed from the kill to its next effect (a step
 * recorded by another process). A run killed more than WORKER_MAX_STALLED_COUNT (2) times without a new
 * step is dead-lettered as stalled, by design: counted apart, not as a resume. Every step's effect is
 * checked to have happened exactly once. Progress goes to stderr, the figures to stdout.
 *
 * Env: BENCH_RECOVERY_KILLS (100 a pattern; about 8 minutes in all on an idle 2-core machine, far longer
 * on a loaded one, where restarts are slow), BENCH_RECOVERY_PATTERNS (a comma-separated subset of the
 * names above), BENCH_RECOVERY_LOG_DIR (each worker's log and the samples, written there per pattern).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createEnqueue, createLogger, createRedis, LIVE_SINCE_MEMBER, QueueSet, workersKey } from '@tickwork/core';
import { waitFor } from '@tickwork/testkit';
import { cleanupAll, installSignalCleanup, msUntilOk, percentile, privateRedis, startChild, type Child } from './schedules/harness.js';
import { catalog, RK_QUEUE, stepsJob } from './recovery-chaos/catalog.js';
import { RunBook, type Sample } from './recovery-chaos/run-book.js';

const KILLS = Number(process.env.BENCH_RECOVERY_KILLS ?? 100);
/** Comma-separated pattern names to run (default: all). */
const ONLY = process.env.BENCH_RECOVERY_PATTERNS?.split(',').map((s) => s.trim()).filter(Boolean);
/** A folder to write each worker process's log to (LOG_LEVEL info then), for looking into a slow resume. */
const LOG_DIR = process.env.BENCH_RECOVERY_LOG_DIR;
const TARGET_P95_MS = 10_000;
const PROCESSES = 3;
const STEPS = 15;
const STEP_MS = 200;
/** How long after the last kill every sample must have resumed or been dead-lettered. */
const SETTLE_MS = 180_000;

interface Pattern {
  name: string;
  concurrency: number;
  /** Runs kept enqueued and unfinished. */
  runs: number;
  gapMs: [number, number];
  /** `isolated`: once all are up, the longest-running process that holds runs and took over none still waiting to resume; `any`: any of them. */
  victims: 'isolated' | 'any';
}

const PATTERNS: Pattern[] = [
  { name: 'free slots', concurrency: 4, runs: 4, gapMs: [1200, 2000], victims: 'isolated' },
  { name: 'full slots', concurrency: 2, runs: 12, gapMs: [1200, 2000], victims: 'isolated' },
  { name: 'rapid kills', concurrency: 4, runs: 6, gapMs: [300, 1000], victims: 'any' },
];

interface PatternResult {
  pattern: Pattern;
  seconds: number;
  samples: Sample[];
  doubled: string[];
  incomplete: string[];
  unfinishedRuns: number;
  /** How many times the whole registry fell silent (every worker dead or starting for half the dead-after time), each a hold of the dead-after time. */
  holds: number;
  /** Spawn to /readyz of each restarted worker, ms (a loaded machine shows here first). */
  restartMs: number[];
}

const progress = (s: string) => process.stderr.write(`[bench:recovery ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const between = ([lo, hi]: [number, number]) => lo + Math.random() * (hi - lo);
const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'n/a');

async function main(): Promise<void> {
  installSignalCleanup();
  if (!Number.isInteger(KILLS) || KILLS < 1) throw new Error(`BENCH_RECOVERY_KILLS must be a whole number ≥ 1, got ${process.env.BENCH_RECOVERY_KILLS}`);
  const started = performance.now();
  const load0 = loadavg();
  const results: PatternResult[] = [];
  try {
    for (const p of PATTERNS.filter((p) => !ONLY || ONLY.includes(p.name))) results.push(await runPattern(p));
  } finally {
    await cleanupAll();
  }
  report(results, (performance.now() - started) / 1000, load0);
}

async function runPattern(p: Pattern): Promise<PatternResult> {
  const redis = await privateRedis();
  const producer = createRedis(redis.url, 'command');
  const queues = new QueueSet(producer, 'tickwork', createLogger('bench', 'silent'));
  const enqueue = createEnqueue(catalog, queues);
  const book = new RunBook(redis.client);
  const env = {
    REDIS_URL: redis.url,
    JOBS_MODULE: fileURLToPath(new URL('./recovery-chaos/catalog.js', import.meta.url)),
    WORKER_QUEUES: RK_QUEUE,
    WORKER_CONCURRENCY: String(p.concurrency),
    ...(LOG_DIR && { LOG_LEVEL: 'info' }),
  };
  const all: Child[] = [];
  const restartMs: number[] = [];
  const ready = new Set<Child>();
  /** Times a restarted worker's start, polling its /readyz gently (every 100 ms) until it answers or dies. */
  const timeRestart = (c: Child) =>
    void waitFor(async () => (await fetch(`http://127.0.0.1:${c.port}/readyz`).catch(() => undefined))?.ok === true || c.app.proc.exitCode !== null || c.app.proc.signalCode !== null, {
      timeoutMs: 300_000,
      intervalMs: 100,
    })
      .then(() => c.app.proc.signalCode === null && (ready.add(c), restartMs.push(performance.now() - c.startedAt)))
      .catch(() => undefined);
  const slots: Child[] = [];
  let added = 0;
  let topping = true;
  const topUp = async () => {
    const unfinished = await queues.get(RK_QUEUE).getJobCountByTypes('wait', 'active', 'delayed', 'prioritized');
    for (let i = unfinished; i < p.runs && topping; i++) {
      const run = `r${added++}`;
      book.jobOf.set(run, (await enqueue(stepsJob, { run, steps: STEPS, stepMs: STEP_MS })).id);
    }
  };
  // The watch: the lines the runs write, the runs kept topped up, and which waiting runs ended failed.
  let watching = true;
  let lastFailCheck = 0;
  const holds = new Set<string>();
  const watch = (async () => {
    while (watching) {
      await book.poll();
      const mark = await redis.client.zscore(workersKey('tickwork'), LIVE_SINCE_MEMBER);
      if (mark !== null) holds.add(mark);
      await topUp();
      if (performance.now() - lastFailCheck > 500) {
        lastFailCheck = performance.now();
        // A run that completed and was removed reads `unknown` too: its `done` line, read after, says which.
        const ended: Sample[] = [];
        for (const s of book.pending()) {
          const job = await queues.get(RK_QUEUE).getJob(book.jobOf.get(s.run) ?? '');
          const state = job ? await job.getState() : 'unknown';
          if (state === 'failed' || state === 'unknown') ended.push(s);
        }
        await book.poll();
        for (const s of ended) if (s.resumedMs === undefined && !book.done.has(s.run)) s.deadLettered = true;
      }
      await sleep(25);
    }
  })();
  const t0 = performance.now();
  try {
    progress(`${p.name}: ${PROCESSES} workers at concurrency ${p.concurrency}, ${p.runs} runs at a time, ${KILLS} kills every ${p.gapMs[0] / 1000}–${p.gapMs[1] / 1000} s`);
    for (let i = 0; i < PROCESSES; i++) slots.push(await startChild('worker', env));
    all.push(...slots);
    await Promise.all(slots.map((c) => msUntilOk(c, '/readyz', 120_000)));
    for (const c of slots) ready.add(c);
    await waitFor(() => slots.some((c) => book.heldBy(c.pid).length > 0), { timeoutMs: 60_000, what: 'runs under way' });
    for (let k = 0; k < KILLS; k++) {
      await book.poll();
      const victim = await chooseVictim(p, slots, book, ready);
      const held = book.heldBy(victim.pid);
      const killedAt = Date.now();
      victim.app.proc.kill('SIGKILL');
      for (const run of held) book.samples.push({ kill: k, run, victim: victim.pid, killedAt });
      const replacement = await startChild('worker', env);
      slots[slots.indexOf(victim)] = replacement;
      all.push(replacement);
      timeRestart(replacement);
      if ((k + 1) % 10 === 0) progress(`  ${p.name}: ${k + 1}/${KILLS} kills, ${book.samples.length} runs hit, ${book.pending().length} waiting to resume`);
      await sleep(between(p.gapMs));
    }
    progress(`  ${p.name}: kills over; waiting for the last runs hit to resume`);
    await waitFor(() => book.pending().length === 0, { timeoutMs: SETTLE_MS, intervalMs: 100, what: 'every run hit to resume or be dead-lettered' }).catch((err: Error) => progress(err.message));
    topping = false;
    await waitFor(async () => (await queues.get(RK_QUEUE).getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
      timeoutMs: SETTLE_MS,
      intervalMs: 250,
      what: 'every run to finish',
    }).catch((err: Error) => progress(err.message));
    watching = false;
    await watch;
    await book.poll();
    return {
      pattern: p,
      seconds: (performance.now() - t0) / 1000,
      samples: book.samples,
      doubled: book.doubled(),
      incomplete: book.incomplete(STEPS),
      unfinishedRuns: await queues.get(RK_QUEUE).getJobCountByTypes('wait', 'active', 'delayed', 'prioritized'),
      holds: holds.size,
      restartMs: restartMs.sort((a, b) => a - b),
    };
  } finally {
    watching = false;
    await watch.catch(() => undefined);
    await Promise.all(slots.map((c) => c.app.stop('SIGKILL')));
    await queues.close();
    producer.disconnect();
    await redis.stop();
    if (LOG_DIR) {
      mkdirSync(LOG_DIR, { recursive: true });
      for (const c of all) writeFileSync(join(LOG_DIR, `${p.name.replace(/ /g, '-')}-${c.pid}.log`), c.app.lines.join('\n'));
      writeFileSync(join(LOG_DIR, `${p.name.replace(/ /g, '-')}-samples.json`), JSON.stringify(book.samples, null, 1));
    }
  }
}

/** The process to kill next (see the file comment); waits, polling, while no process qualifies. */
async function chooseVictim(p: Pattern, slots: Child[], book: RunBook, ready: ReadonlySet<Child>): Promise<Child> {
  if (p.victims === 'any') return slots[Math.floor(Math.random() * slots.length)] as Child;
  return waitFor(
    async () => {
      await book.poll();
      // Every other process up: a kill here is one crash among live workers, not a whole-cluster outage
      // (on a loaded machine a restart can take longer than the gap between kills).
      if (slots.some((c) => !ready.has(c))) return undefined;
      // The one running longest: each process lives about three gaps, so a kill rarely meets another's aftermath.
      return slots.filter((c) => book.heldBy(c.pid).length > 0 && !book.holdsRecovering(c.pid)).sort((a, b) => a.startedAt - b.startedAt)[0];
    },
    { timeoutMs: 120_000, intervalMs: 50, what: 'a process holding runs to kill' },
  );
}

function report(results: PatternResult[], totalS: number, load0: number[]): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
  out(`\nrecovery after kill -9 under chaos (issue 37 §3): ${PROCESSES} stock workers, defaults (heartbeat 1 s, dead after 5 s), ${KILLS} kills a pattern, each killed worker restarted at once`);
  out(`time from a kill to the next effect (a step recorded elsewhere) of each run the killed worker held; target p95 <= ${TARGET_P95_MS / 1000} s`);
  let allMet = true;
  for (const r of results) {
    const samples = r.samples.filter((s) => !s.moot);
    const resumed = samples.flatMap((s) => (s.resumedMs === undefined ? [] : [s.resumedMs])).sort((a, b) => a - b);
    const dead = samples.filter((s) => s.deadLettered).length;
    const never = samples.length - resumed.length - dead;
    const p95 = percentile(resumed, 0.95);
    const met = resumed.length > 0 && p95 <= TARGET_P95_MS && never === 0 && r.doubled.length === 0;
    allMet &&= met;
    out(
      `  ${r.pattern.name.padEnd(12)} runs hit ${String(samples.length).padStart(4)}, resumed ${String(resumed.length).padStart(4)}: ` +
        `median ${secs(percentile(resumed, 0.5))}, p95 ${secs(p95)}, max ${secs(resumed.at(-1) ?? NaN)}; ` +
        `dead-lettered as stalled ${dead}, never resumed ${never}; doubled effects ${r.doubled.length}, runs missing a step ${r.incomplete.length}, ` +
        `unfinished at the end ${r.unfinishedRuns}; whole-registry silences ${r.holds} (${r.seconds.toFixed(0)} s): ${met ? 'MET' : 'NOT MET'}`,
    );
    if (r.doubled.length > 0) out(`    doubled: ${r.doubled.slice(0, 10).join(', ')}`);
    out(`    a restarted worker's spawn to ready: median ${secs(percentile(r.restartMs, 0.5))}, max ${secs(r.restartMs.at(-1) ?? NaN)}`);
  }
  out(`p95 <= ${TARGET_P95_MS / 1000} s in every pattern, every step's effect once: ${allMet ? 'MET' : 'NOT MET'} (bench took ${totalS.toFixed(0)} s)`);
  out(`load average (1, 5, 15 min) at the start: ${load(load0)}, at the end: ${load(loadavg())} on ${cpus().length} cores: a busy machine slows restarts, and every worker down at once holds judgements for the dead-after time`);
}

main().catch(async (err: unknown) => {
  process.stderr.write(`bench:recovery failed: ${(err as Error).stack ?? String(err)}\n`);
  await cleanupAll();
  process.exit(1);
});
