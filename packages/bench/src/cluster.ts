/**
 * The cluster row of `pnpm bench`: no-op jobs over several queues, drained at once (one Worker per queue,
 * concurrency BENCH_CONCURRENCY each), on one Redis and on a private Redis Cluster of 3 masters with a
 * replica each (testkit startRedisCluster), in the same run: bare BullMQ, and tickwork with every feature on
 * (the stock worker pool). On the cluster the queues are picked so that each master serves as many of them
 * (checked against the cluster's slot map before every drain); bare BullMQ gets a hash-tagged prefix per
 * queue (`bench:{<queue>}`), as BullMQ needs on a cluster. Rounds are paired as in main.ts (every mode and
 * side once per round, the order rotating, one uncounted warm-up round); ratios are medians of per-round
 * ratios. On a small machine no gain is expected (every Redis process and the workers share its cores):
 * the row shows that the queues' Redis work is spread over the masters (each master's share of Redis CPU)
 * and what the cluster client costs (cluster / one node).
 *
 * Env: BENCH_CLUSTER=0 (leave the row out), BENCH_CLUSTER_JOBS (jobs per drain over all queues, default
 * 12000), BENCH_CLUSTER_QUEUES (a multiple of 3, default 6), BENCH_ROUNDS, BENCH_CONCURRENCY.
 */
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startRedisCluster, startRedisServer, type RedisClusterHandle } from '@tickwork/testkit';
import { createCatalog, createLogger, createRedis, defineJob, DEFAULT_CLUSTER_FAILOVER_MS, QueueSet, type RedisClient, type RedisTarget } from '@tickwork/core';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';
import { startWorkerPool, type WorkerPool } from '@tickwork/worker';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { timeDrain, type Drain, type Drained, type Side } from './cluster-drain.js';
import { median } from './measure.js';

const JOBS = Number(process.env.BENCH_CLUSTER_JOBS ?? 12_000);
const QUEUES = Number(process.env.BENCH_CLUSTER_QUEUES ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const MASTERS = 3;

interface BenchSide extends Side {
  /** REDIS_URL, or the cluster as REDIS_CLUSTER_NODES gives it: connections are made as the apps make them. */
  target: RedisTarget;
  /** `count` fresh queue names; on a cluster, as many on each master. */
  queues(count: number): Promise<string[]>;
}

/** A mode: how one drain of `queues` on `side` is run. */
type Mode = (side: BenchSide, queues: string[], jobsPerQueue: number) => Drain;

let fresh = 0;
const freshName = () => `cb${(fresh++).toString(36)}`;

/** Bare BullMQ: a Worker per queue whose processor returns at once; keys hash-tagged per queue. */
const bare: Mode = (side, queues, jobsPerQueue) => {
  const prefix = (q: string) => `bench:{${q}}`;
  const producer = createRedis(side.target, 'command');
  const blocking: RedisClient[] = [];
  let workers: Worker[] = [];
  const opened = queues.map((q) => new Queue(q, { connection: producer, prefix: prefix(q) }));
  return {
    fill: () => fillQueues(opened, () => 'bench.noop', jobsPerQueue),
    waitKeys: () => opened.map((q) => q.keys.wait as string),
    async start() {
      workers = queues.map((q) => {
        const connection = createRedis(side.target, 'blocking');
        blocking.push(connection);
        return new Worker(q, async () => null, { connection, prefix: prefix(q), concurrency: CONCURRENCY });
      });
      return workers;
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      for (const c of blocking) c.disconnect();
      await Promise.all(opened.map(async (q) => (await q.obliterate({ force: true }), await q.close())));
      producer.disconnect();
    },
  };
};

/**
 * tickwork, every feature on: the stock worker pool (catalog lookup, payload validation, cancel gate, ledger
 * with results written ahead of the acknowledgement, recovery heartbeats, cancel listener), a no-op job per
 * queue, queues and keys laid out as the apps lay them out on that side (redis/keyspace.ts).
 */
const tickwork: Mode = (side, queues, jobsPerQueue) => {
  const jobName = (q: string) => `bench.noop.${q}`;
  const catalog = createCatalog(queues.map((q) => defineJob({ name: jobName(q), queue: q, schema: z.object({ i: z.number() }), handler: async () => null })));
  const redis = createRedis(side.target, 'command');
  const set = new QueueSet(redis, 'bench', silent);
  let pool: WorkerPool | undefined;
  return {
    fill: () => fillQueues(queues.map((q) => set.get(q)), (q) => jobName(q.name), jobsPerQueue),
    waitKeys: () => queues.map((q) => set.get(q).keys.wait as string),
    async start() {
      const enqueue = async () => {
        throw new Error('the bench jobs enqueue nothing');
      };
      pool = startWorkerPool({ catalog, redis, redisTarget: side.target, enqueue, log: silent, prefix: 'bench', concurrency: CONCURRENCY, queues });
      return [...pool.workers];
    },
    async close() {
      const acks = await Promise.all((pool?.workers ?? []).map((w) => ackConnectionOf(w)));
      await pool?.drain(30_000);
      // BullMQ leaves a connection it was given open; the pool's workers each got one.
      for (const c of acks) c?.disconnect();
      await Promise.all(queues.map(async (q) => set.get(q).obliterate({ force: true })));
      await set.close();
      redis.disconnect();
    },
  };
};
const silent = createLogger('bench', 'silent');

async function fillQueues(queues: Queue[], name: (q: Queue) => string, jobsPerQueue: number): Promise<void> {
  for (const queue of queues) {
    for (let i = 0; i < jobsPerQueue; i += 1000) {
      const n = Math.min(1000, jobsPerQueue - i);
      await queue.addBulk(Array.from({ length: n }, (_, k) => ({ name: name(queue), data: { i: i + k }, opts: { removeOnComplete: true, removeOnFail: true } })));
    }
  }
}

async function oneNode(): Promise<BenchSide & { stop: () => Promise<void> }> {
  const server = await startRedisServer();
  return {
    label: 'one node',
    target: server.url,
    masters: async () => [new Redis(server.url)],
    queues: async (count) => Array.from({ length: count }, freshName),
    checkSpread: async () => undefined,
    stop: () => server.stop(),
  };
}

async function cluster(): Promise<BenchSide & { stop: () => Promise<void>; handle: RedisClusterHandle }> {
  const handle = await startRedisCluster({ masters: MASTERS, replicas: 1 });
  // No failover happens in the bench: the masters found once stay the masters.
  const ports: number[] = [];
  for (const node of handle.nodes) {
    if ((await node.client().info('replication')).includes('role:master')) ports.push(node.port);
  }
  if (ports.length !== MASTERS) throw new Error(`the bench cluster has ${ports.length} masters, expected ${MASTERS}`);
  return {
    label: 'cluster',
    handle,
    target: { nodes: handle.seeds.split(',').map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })), url: 'redis://127.0.0.1', failoverMs: DEFAULT_CLUSTER_FAILOVER_MS },
    masters: async () => ports.map((port) => new Redis({ port, host: '127.0.0.1' })),
    async queues(count) {
      const per = new Map<number, string[]>();
      const picked: string[] = [];
      while (picked.length < count) {
        const name = freshName();
        const owner = (await handle.masterOf(`{${name}}`)).port;
        const mine = per.get(owner) ?? [];
        if (mine.length >= count / MASTERS) continue;
        per.set(owner, [...mine, name]);
        picked.push(name);
      }
      if (per.size !== MASTERS) throw new Error(`queues landed on ${per.size} masters, expected ${MASTERS}`);
      return picked;
    },
    // The keys the mode actually wrote, not the names it was given: each master must serve as many queues.
    async checkSpread(keys) {
      const owners = await Promise.all(keys.map(async (k) => (await handle.masterOf(k)).port));
      const counts = [...new Set(owners)].map((p) => owners.filter((o) => o === p).length);
      if (counts.length !== MASTERS || counts.some((c) => c !== keys.length / MASTERS)) {
        throw new Error(`the queues' keys are spread ${counts.join('/')} over the masters, expected ${keys.length / MASTERS} on each of ${MASTERS}`);
      }
    },
    stop: () => handle.stop(),
  };
}

const MODES: Record<string, Mode> = { bare, tickwork };

/** Runs the row and prints it. */
export async function clusterSection(out: (s: string) => void): Promise<void> {
  const per = Math.floor(JOBS / QUEUES);
  out(
    `\ncluster row: ${QUEUES} queues (${QUEUES / MASTERS} per master on the cluster), ${per * QUEUES} no-op jobs per drain, ` +
      `concurrency ${CONCURRENCY} per queue; one node vs a cluster of ${MASTERS} masters + ${MASTERS} replicas, ${ROUNDS} rounds + warm-up\n`,
  );
  const one = await oneNode();
  const clu = await cluster().catch(async (err: unknown) => {
    await one.stop();
    throw err;
  });
  const sides = [one, clu];
  const runs = Object.keys(MODES).flatMap((mode) => sides.map((side) => ({ mode, side })));
  const rates = new Map<string, number[]>();
  const shares = new Map<string, number[][]>();
  const key = (mode: string, side: Side) => `${mode} on ${side.label}`;
  try {
    for (let r = 0; r <= ROUNDS; r++) {
      for (let i = 0; i < runs.length; i++) {
        const { mode, side } = runs[(i + r) % runs.length] as (typeof runs)[number];
        const jobs = r === 0 ? Math.max(Math.floor(per / 5), 100) : per;
        const queues = await side.queues(QUEUES);
        const m = await timeDrain(side, (MODES[mode] as Mode)(side, queues, jobs), jobs * QUEUES);
        out(`  ${r === 0 ? 'warm-up' : `round ${r}`.padEnd(7)} ${key(mode, side).padEnd(22)} ${line(m)}\n`);
        if (r === 0) continue;
        (rates.get(key(mode, side)) ?? rates.set(key(mode, side), []).get(key(mode, side)))?.push(m.rate);
        (shares.get(key(mode, side)) ?? shares.set(key(mode, side), []).get(key(mode, side)))?.push(m.shares);
      }
    }
  } finally {
    await Promise.all(sides.map((s) => s.stop()));
  }
  const ratioOf = (a: string, b: string) => {
    const xs = rates.get(a) ?? [];
    const ys = rates.get(b) ?? [];
    return median(xs.map((x, i) => x / (ys[i] ?? NaN)));
  };
  for (const mode of Object.keys(MODES)) {
    const spread = (shares.get(key(mode, clu)) ?? []).reduce((acc, s) => acc.map((a, i) => a + (s[i] ?? 0)), [0, 0, 0]).map((s) => s / ROUNDS);
    out(
      `  ${mode.padEnd(8)}: one node ${median(rates.get(key(mode, one)) ?? []).toFixed(0)} jobs/s, cluster ${median(rates.get(key(mode, clu)) ?? []).toFixed(0)} jobs/s: ` +
        `cluster ${ratioOf(key(mode, clu), key(mode, one)).toFixed(2)}x one node; Redis CPU per master on the cluster ${spread.map((s) => `${(s * 100).toFixed(0)}%`).join(' / ')}\n`,
    );
  }
  if (MODES.tickwork) {
    out(`  tickwork against bare BullMQ: ${ratioOf(key('tickwork', one), key('bare', one)).toFixed(2)}x on one node, ${ratioOf(key('tickwork', clu), key('bare', clu)).toFixed(2)}x on the cluster\n`);
  }
  out(
    `  no gain is expected on this machine (${cpus().length} cores shared by the ${MASTERS * 2} Redis processes and the workers): the row shows the queues' ` +
      `Redis work spread over ${MASTERS} masters, so capacity (memory, one Redis core) is no longer one node's, and the cluster client's cost (cluster/one node)\n`,
  );
}

const line = (m: Drained) =>
  `${m.rate.toFixed(0).padStart(6)} jobs/s   cpu per job: node ${m.nodeUs.toFixed(0).padStart(3)} us, redis ${m.redisUs.toFixed(0).padStart(3)} us` +
  (m.shares.length > 1 ? ` (per master ${m.shares.map((s) => `${(s * 100).toFixed(0)}%`).join(' / ')})` : '');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  clusterSection((s) => process.stdout.write(s)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`cluster bench failed: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
