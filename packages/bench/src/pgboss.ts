/**
 * The peer row of `pnpm bench`: the same no-op job drained by pg-boss 10 (the last major version that
 * runs on Node 20) on the machine's PostgreSQL, in a schema of its own that is dropped afterwards.
 *
 * pg-boss is held to its fastest settings on this machine, not tickwork's concurrency: its workers poll, and
 * a worker waits out `pollingIntervalSeconds` (0.5 s at least) between fetches even when jobs are waiting,
 * so its throughput comes from fetching in batches (`batchSize`, the handler gets the whole batch and
 * pg-boss completes it in one statement) and from several workers (`work()` called once per worker).
 * BENCH_PGBOSS_WORKERS (default 5) and BENCH_PGBOSS_BATCH (default 2000) set them: the fastest
 * `pnpm bench:pgboss` (pgboss-sweep.ts) found for the bench's 10,000-job rounds, in two sweeps, where a round
 * is fetched in one poll. 10 x 1000 came second in both, within the noise (pg-boss's rate varies 2x to 4x
 * between rounds: a round ends one poll sooner or later); fewer jobs per poll (10 x 250, 10 x 500) leave it
 * waiting on its polling interval, and more workers (20 x 500) slow each other's fetches.
 *
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres). When PostgreSQL cannot be reached
 * the row is skipped with the reason printed.
 */
import PgBoss from 'pg-boss';
import pg from 'pg';

const QUEUE = 'bench-noop';
const WORKERS = Number(process.env.BENCH_PGBOSS_WORKERS ?? 5);
const BATCH = Number(process.env.BENCH_PGBOSS_BATCH ?? 2000);
/** Benches opened in this process, so each has a schema of its own (the sweep opens several). */
let opened = 0;

export interface PgBossBench {
  settings: string;
  /** Pre-fills `jobs` no-op jobs, then times the workers draining them. */
  measure(jobs: number): Promise<{ rate: number; nodeUs: number }>;
  close(): Promise<void>;
}

/** Connects and installs pg-boss in a fresh schema; a reason string when PostgreSQL is not reachable. */
export async function openPgBossBench(workers = WORKERS, batch = BATCH): Promise<PgBossBench | string> {
  const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await probe.connect();
    await probe.query('select 1');
  } catch (err) {
    return `PostgreSQL not reachable at ${redact(url)} (${(err as Error).message}); set BENCH_PG_URL`;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const schema = `bench_pgboss_${process.pid}_${++opened}`;
  // Maintenance and the cron scheduler are off: they are not part of draining a queue, and would add
  // queries of their own to the timed window.
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, max: workers + 4 });
  boss.on('error', (err: Error) => process.stderr.write(`pg-boss: ${err.message}\n`));
  await boss.start();
  let round = 0;
  return {
    settings: `pg-boss 10.4.2, ${workers} workers x batchSize ${batch}, pollingIntervalSeconds 0.5`,
    async measure(jobs) {
      // A queue of its own per round, as the BullMQ modes have (measure.ts). It also keeps the last round's
      // workers out: offWork stops them without waiting, and one still inside a fetch would take this round's
      // jobs into the last round's handler, and this round would never end.
      const queue = `${QUEUE}-${++round}`;
      await boss.createQueue(queue);
      for (let i = 0; i < jobs; i += 1000) {
        const n = Math.min(1000, jobs - i);
        await boss.insert(Array.from({ length: n }, (_, k) => ({ name: queue, data: { i: i + k } })));
      }
      let done = 0;
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const started = performance.now();
      const cpu0 = process.cpuUsage();
      for (let w = 0; w < workers; w++) {
        await boss.work(queue, { batchSize: batch, pollingIntervalSeconds: 0.5 }, async (fetched) => {
          done += fetched.length;
          if (done >= jobs) finish();
        });
      }
      await finished;
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      await boss.offWork(queue);
      return { rate: jobs / seconds, nodeUs: (cpu.user + cpu.system) / jobs };
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.end();
    },
  };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
