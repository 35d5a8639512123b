/**
 * The peer row of `pnpm bench`: the same no-op job drained by pg-boss 10 (the last major version that
 * runs on Node 20) on the machine's PostgreSQL, in a schema of its own that is dropped afterwards.
 *
 * pg-boss is held to its fastest settings on this machine, not tickwork's concurrency: its workers poll, and
 * a worker waits out `pollingIntervalSeconds` (0.5 s at least) between fetches even when jobs are waiting,
 * so its throughput comes from fetching in batches (`batchSize`, the handler gets the whole batch and
 * pg-boss completes it in one statement) and from several workers (`work()` called once per worker).
 * BENCH_PGBOSS_WORKERS (default 2) and BENCH_PGBOSS_BATCH (default 5000) set them: the fastest `pnpm
 * bench:pgboss` (pgboss-sweep.ts) found for the bench's 10,000-job rounds on this project's machine. The
 * batches that take a round's jobs in one fetch per worker come first; smaller ones wait on the polling
 * interval.
 *
 * Each round's queue is new (pg-boss makes it a partition of its own), and its partition is analyzed once
 * its jobs are in, before the timed window: a queue in use has current planner statistics (autovacuum
 * analyzes a table whose rows changed), a partition made a second ago has none, and without them
 * PostgreSQL's plans for pg-boss's fetch and completion vary from setting to setting. Measured here
 * (medians of 5 to 7 rounds), unanalyzed: 2 workers x 5000 53,000 jobs/s, 5 x 2000 4,700, 20 x 500 11,000
 * (3,000 to 17,000 a round), and 20 x 500 on 20,000-job rounds 1,500 (each completion statement running 5 s
 * or more); analyzed: 2 x 5000 56,000 to 59,000, 5 x 2000 46,000 to 49,000, 20 x 500 on 20,000-job rounds
 * 18,000.
 *
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres). When PostgreSQL cannot be reached
 * the row is skipped with the reason printed. When it runs on this machine (the URL's host is a loopback
 * one), each round also reports PostgreSQL's CPU per job (postgres-cpu.ts), the peer's counterpart of the
 * Redis CPU the BullMQ modes report.
 */
import PgBoss from 'pg-boss';
import pg from 'pg';
import { postgresCpu } from './postgres-cpu.js';

const QUEUE = 'bench-noop';
const WORKERS = Number(process.env.BENCH_PGBOSS_WORKERS ?? 2);
const BATCH = Number(process.env.BENCH_PGBOSS_BATCH ?? 5000);
/** Benches opened in this process, so each has a schema of its own (the sweep opens several). */
let opened = 0;

export interface PgBossBench {
  settings: string;
  /** Pre-fills `jobs` no-op jobs, then times the workers draining them. */
  /** postgresUs: PostgreSQL's CPU per job in the timed window, when it runs on this machine (NaN when not known). */
  measure(jobs: number): Promise<{ rate: number; nodeUs: number; postgresUs: number }>;
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
  // PostgreSQL's CPU per job is read from /proc when the server is this machine's (the default URL's).
  const local = /^(localhost|127\.0\.0\.1|\[::1\])$/.test(new URL(url).hostname);
  const serverCpu = (): number => (local ? (postgresCpu() ?? NaN) : NaN);
  const schema = `bench_pgboss_${process.pid}_${++opened}`;
  // Maintenance and the cron scheduler are off: they are not part of draining a queue, and would add
  // queries of their own to the timed window.
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, max: workers + 4 });
  boss.on('error', (err: Error) => process.stderr.write(`pg-boss: ${err.message}\n`));
  await boss.start();
  // Reads how many of a round's jobs pg-boss has completed (see measure).
  const watch = new pg.Client({ connectionString: url });
  await watch.connect();
  const completed = async (queue: string): Promise<number> =>
    (await watch.query<{ n: number }>(`select count(*)::int as n from ${schema}.job where name = $1 and state = 'completed'`, [queue])).rows[0]?.n ?? 0;
  /** The round's queue's partition (pg-boss makes one per queue), as a qualified name, if it has one. */
  const partitionOf = async (queue: string): Promise<string | undefined> => {
    const { rows } = await watch.query<{ partition_name: string }>(`select partition_name from ${schema}.queue where name = $1`, [queue]);
    const partition = rows[0]?.partition_name;
    return partition ? `${schema}.${pg.escapeIdentifier(partition)}` : undefined;
  };
  // What PostgreSQL would otherwise do after a round while the next modes run, done before they do: the
  // round's partition dropped (no autovacuum of its 10,000 updated rows later), its writes checkpointed
  // (CHECKPOINT needs a superuser or pg_checkpoint; without, it is left to PostgreSQL). A stopping worker's
  // last fetch may still run: pg-boss's fetch reads the parent table and ignores errors.
  const settle = async (queue: string, partition: string | undefined): Promise<void> => {
    // The partition first: pg-boss 10.4.2's deleteQueue deletes the queue's row before it drops the
    // partition, which a row of the partition still refers to (its foreign key), so it fails on a queue with jobs.
    if (partition) await watch.query(`drop table if exists ${partition}`);
    await boss.deleteQueue(queue);
    await watch.query('checkpoint').catch(() => undefined);
  };
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
      // Its partition analyzed once its jobs are in, before the timed window (see the header).
      const partition = await partitionOf(queue);
      if (partition) await watch.query(`analyze ${partition}`);
      let done = 0;
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const started = performance.now();
      const cpu0 = process.cpuUsage();
      const pgCpu0 = serverCpu();
      for (let w = 0; w < workers; w++) {
        await boss.work(queue, { batchSize: batch, pollingIntervalSeconds: 0.5 }, async (fetched) => {
          done += fetched.length;
          if (done >= jobs) finish();
        });
      }
      await finished;
      // A round ends when pg-boss has completed its jobs, as a BullMQ round ends on its jobs' `completed`
      // events: pg-boss completes a batch in one statement after its handler returns, and a batch of
      // thousands takes PostgreSQL a second or more of its own. Timed to the handlers' return, the row would
      // measure pg-boss's fetches alone, and the next mode would run beside that work.
      const deadline = Date.now() + 120_000;
      while ((await completed(queue)) < jobs) {
        if (Date.now() > deadline) throw new Error(`pg-boss completed fewer than ${jobs} jobs of ${queue} in 120 s`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const pgSeconds = serverCpu() - pgCpu0;
      await boss.offWork(queue);
      await settle(queue, partition);
      return { rate: jobs / seconds, nodeUs: (cpu.user + cpu.system) / jobs, postgresUs: (pgSeconds * 1e6) / jobs };
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
      await watch.end();
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
