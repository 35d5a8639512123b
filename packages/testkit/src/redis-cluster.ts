import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_CLUSTER_FAILOVER_MS, type ClusterTarget } from '@tickwork/core';
import { Cluster, Redis } from 'ioredis';
import { bindable, CLUSTER_BUS_OFFSET, freePort } from './free-port.js';
import { spawnOnFreePort, spawnRedisServer } from './redis-server.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

export interface ClusterNodeHandle {
  port: number;
  /** kill -9 the node (as a crashed host). */
  kill(): Promise<void>;
  /** Start it again on the same port and data dir; it rejoins the cluster from its nodes.conf. */
  restart(): Promise<void>;
  /** SIGSTOP the node: its connections stay open and nothing is answered (a frozen host) until resume(). */
  pause(): void;
  /** SIGCONT a paused node. */
  resume(): void;
  /** A plain client of this node alone. */
  client(): Redis;
}

export interface RedisClusterHandle {
  nodes: ClusterNodeHandle[];
  /** `127.0.0.1:<port>,...`: every node, for REDIS_CLUSTER_NODES-style configuration. */
  seeds: string;
  /** The env an app process needs to use this cluster (`REDIS_CLUSTER_NODES`), for startApp. */
  env: { REDIS_CLUSTER_NODES: string };
  /** The same cluster as tickwork's createRedis takes it (no credentials, the default failover budget). */
  target: ClusterTarget;
  /** An ioredis Cluster client over every node (closed by stop()). */
  client(): Cluster;
  /** The node that is master of `key`'s slot right now. */
  masterOf(key: string): Promise<ClusterNodeHandle>;
  /** Resolves once every slot is served, each master has its replicas, and every live node says ok. */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/** A free port whose cluster-bus port (port + 10000) is free too. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + CLUSTER_BUS_OFFSET <= 65_535 && (await bindable(port + CLUSTER_BUS_OFFSET))) return port;
  }
}

/**
 * A private Redis Cluster (`redis-server --cluster-enabled yes` on free loopback ports, joined with
 * `redis-cli --cluster create`): `masters` masters with `replicas` replicas each, a short node timeout so
 * a killed master's replica is promoted in a few seconds. `ready()` waits for the replicas' roles, not only
 * `cluster_state:ok` (a replica still syncing would not be promoted).
 */
export async function startRedisCluster(
  opts: {
    masters?: number;
    replicas?: number;
    nodeTimeoutMs?: number;
    /** `cluster-require-full-coverage` (Redis's default, true: every master refuses commands while a slot has no master). */
    requireFullCoverage?: boolean;
  } = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 1;
  const count = masters * (1 + replicas);
  const dir = mkdtempSync(join(tmpdir(), 'tickwork-redis-cluster-'));
  const procs = new Map<number, ChildProcess>();
  const clients: (Redis | Cluster)[] = [];
  const ports: number[] = [];

  const argsFor = (port: number) => ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--dbfilename', `dump-${port}.rdb`, '--save', '', '--appendonly', 'no',
    '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000),
    '--hz', '100', '--maxmemory-policy', 'noeviction', '--cluster-require-full-coverage', opts.requireFullCoverage === false ? 'no' : 'yes'];
  const launch = async (port: number) => {
    procs.set(port, await spawnRedisServer(argsFor(port), port));
  };
  const exit = (port: number, signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const child = procs.get(port);
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  const plain = (port: number) => {
    const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, retryStrategy: () => 200 });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };

  const stop = async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(ports.map((p) => exit(p, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // One node at a time: nodes started side by side would pick from the same free ports.
    for (let i = 0; i < count; i++) {
      const { port, child } = await spawnOnFreePort(freeClusterPort, argsFor);
      ports.push(port);
      procs.set(port, child);
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
  } catch (err) {
    await stop();
    throw err;
  }

  const nodes: ClusterNodeHandle[] = ports.map((port) => ({
    port,
    kill: () => exit(port, 'SIGKILL'),
    restart: () => launch(port),
    pause: () => void procs.get(port)?.kill('SIGSTOP'),
    resume: () => void procs.get(port)?.kill('SIGCONT'),
    client: () => plain(port),
  }));
  const alive = (port: number) => {
    const child = procs.get(port);
    return !!child && child.exitCode === null && child.signalCode === null;
  };
  /** One node's view: its role and, for a replica, whether its link to its master is up. */
  const view = async (port: number) => {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const [info, repl] = await Promise.all([c.cluster('INFO') as Promise<string>, c.info('replication')]);
      return { ok: /cluster_state:ok/.test(info), master: /role:master/.test(repl), linked: /master_link_status:up/.test(repl), replicasOf: Number(/connected_slaves:(\d+)/.exec(repl)?.[1] ?? 0) };
    } finally {
      c.disconnect();
    }
  };
  /** What the nodes said at the last check, for the error when the cluster never gets ready. */
  let lastViews = 'no node answered yet';
  const ready = async () => {
    try {
      await waitFor(
        async () => {
          const live = ports.filter(alive);
          const views = await Promise.all(live.map(view));
          lastViews = views.map((v, i) => `${live[i]}: ${v.master ? 'master' : v.linked ? 'replica linked' : 'replica not linked'}${v.ok ? '' : ', state not ok'}`).join('; ');
          const masterViews = views.filter((v) => v.master);
          return (
            views.every((v) => v.ok) &&
            masterViews.length === masters &&
            views.filter((v) => !v.master).every((v) => v.linked)
          );
        },
        { timeoutMs: 60_000, intervalMs: 100, what: 'the cluster: every slot served, every live replica linked to its master' },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message} (last seen: ${lastViews})`);
    }
  };
  // A cluster that never gets ready is stopped here: the caller has no handle to stop it with.
  await ready().catch(async (err: unknown) => {
    await stop();
    throw err;
  });

  return {
    nodes,
    seeds: ports.map((p) => `127.0.0.1:${p}`).join(','),
    env: { REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(',') },
    target: { nodes: ports.map((port) => ({ host: '127.0.0.1', port })), url: 'redis://127.0.0.1', failoverMs: DEFAULT_CLUSTER_FAILOVER_MS },
    client() {
      const c = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { maxRetriesPerRequest: 3 } });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
    async masterOf(key: string) {
      const any = ports.find(alive);
      if (any === undefined) throw new Error('no cluster node is running');
      const c = plain(any);
      const slot = (await c.cluster('KEYSLOT', key)) as number;
      const shards = await c.cluster('SLOTS');
      // Each entry: [first slot, last slot, [host, port, id] of the master, then its replicas].
      const owner = shards.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
      const node = nodes.find((n) => n.port === owner);
      if (!node) throw new Error(`no master serves slot ${slot} of ${JSON.stringify(key)}`);
      return node;
    },
    ready,
    stop,
  };
}

/**
 * The env that points an app process (startApp) at a Redis: REDIS_URL for one Redis (a URL), or
 * REDIS_CLUSTER_NODES for a cluster, so one test helper runs its apps on either.
 */
export function redisEnvOf(redis: string | Pick<RedisClusterHandle, 'env'>): Record<string, string> {
  return typeof redis === 'string' ? { REDIS_URL: redis } : { ...redis.env };
}
