import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { watchCluster } from './cluster-watch.js';
import { closeEnds } from './close-ends.js';
import { withSettledConnect } from './cluster-connect.js';
import { commandTimeout, withClusterDeadline, withCommandDeadline } from './deadline.js';

/**
 * Connection roles follow BullMQ's production guide:
 * - `blocking` (Workers, QueueEvents): `maxRetriesPerRequest: null`, so a Redis restart never makes a
 *   worker give up on its blocking commands; it reconnects and resumes.
 * - `command` (Queues, producers, the ledger): `maxRetriesPerRequest: 3` (the default 20 would hang an
 *   HTTP request for long), so a caller sees an outage within a few reconnect attempts. The offline queue
 *   stays on (`enableOfflineQueue: true`): commands sent while reconnecting wait and go out in order once
 *   the connection is back, which the ledger relies on (a result written ahead of BullMQ's acknowledgement
 *   must reach Redis before it; see ledger-batch.ts).
 */
export type ConnectionRole = 'blocking' | 'command';

/** One Redis (standalone) or a Redis Cluster: every shared connection is typed this way. */
export type RedisClient = Redis | Cluster;

/**
 * Where Redis is: a `redis://` / `rediss://` URL (one Redis), or a cluster's seed nodes. On a cluster the
 * URL still gives the credentials and TLS (`rediss://`) every node is reached with; its host is ignored.
 */
export type RedisTarget = string | ClusterTarget;

export interface ClusterTarget {
  /** Seed nodes (REDIS_CLUSTER_NODES); the client discovers the others from them. */
  nodes: { host: string; port: number }[];
  /** REDIS_URL: its user, password and scheme (rediss: TLS) apply to every node. */
  url: string;
  /** How long a command keeps retrying through a master's failover (REDIS_CLUSTER_FAILOVER_MS). */
  failoverMs: number;
}

/** Default REDIS_CLUSTER_FAILOVER_MS: Redis's default cluster-node-timeout (15 s), the promotion after it, and margin. */
export const DEFAULT_CLUSTER_FAILOVER_MS = 30_000;

/** Delay between retries while a slot's master is unreachable or the cluster is down (ioredis's default is 100 ms). */
export const CLUSTER_RETRY_DELAY_MS = 200;

export function redisOptions(role: ConnectionRole): RedisOptions {
  return role === 'blocking'
    ? { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy: backoff, ...socketOptions() }
    : { maxRetriesPerRequest: 3, enableOfflineQueue: true, retryStrategy: backoff, ...socketOptions() };
}

/**
 * TCP keep-alive probes from 5 s of silence, so the OS notices a vanished host (no FIN, no RST) in seconds
 * rather than the two hours of its default; a connect that gets nowhere fails after the command deadline
 * (REDIS_COMMAND_TIMEOUT_MS, deadline.ts) rather than ioredis's 10 s; and a socket being closed whose peer
 * does not close its side within DISCONNECT_TIMEOUT_MS is destroyed.
 */
function socketOptions(): Pick<RedisOptions, 'keepAlive' | 'connectTimeout' | 'disconnectTimeout'> {
  const ms = commandTimeout();
  return { keepAlive: 5000, disconnectTimeout: DISCONNECT_TIMEOUT_MS, ...(ms > 0 && { connectTimeout: ms }) };
}

/**
 * How long a closed socket waits for its peer's close before it is destroyed (ioredis's `disconnectTimeout`,
 * 2 s by default). A Redis that answers closes its side at once; a frozen one (SIGSTOP, a paused VM) never
 * does, and until the socket is gone the connection has not ended: the commands sent on it are not failed
 * over to the promoted replica, and a worker's blocking connection renewed by the consumer watchdog is not
 * opened again. A frozen master's promotion is followed that much sooner (issue 37 §2: a job taken 5.2 s
 * after a promotion, 2 s of it this wait).
 */
export const DISCONNECT_TIMEOUT_MS = 500;

/**
 * Cluster options that carry commands through a master's failover instead of failing them. A command sent
 * to a killed master fails with "Connection is closed"; ioredis then waits `retryDelayOnFailover`, asks
 * another node (which answers MOVED to the dead master until its replica is promoted) and tries again. Each
 * failed try and each MOVED spends one of `maxRedirections`, so a command survives about
 * `maxRedirections / 2 × retryDelayOnFailover`. ioredis's default (16 × 100 ms) is shorter than any
 * promotion (cluster-node-timeout, 15 s by default, plus the election): commands in flight then failed,
 * and jobs already done were retried or marked failed. `maxRedirections` is sized here so that budget
 * covers `failoverMs`.
 */
export function clusterOptions(role: ConnectionRole, target: ClusterTarget): ClusterOptions {
  const { retryStrategy: _perNode, enableOfflineQueue: _offline, ...node } = redisOptions(role);
  return {
    redisOptions: { ...node, ...credentialsOf(target.url) },
    maxRedirections: Math.ceil((2 * target.failoverMs) / CLUSTER_RETRY_DELAY_MS),
    retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
    // Commands made while the client (re)discovers the cluster wait for it, in order, as on one Redis.
    enableOfflineQueue: true,
    enableReadyCheck: true,
    clusterRetryStrategy: backoff,
  };
}

/**
 * A connection of `role` to `target`. Either way a socket that gets no reply within the command deadline
 * is dropped (deadline.ts); a cluster client also follows promotions within about a second (cluster-watch.ts).
 */
export function createRedis(target: RedisTarget, role: ConnectionRole): RedisClient {
  if (typeof target === 'string') return refuseUnselectedDatabase(withCommandDeadline(closeEnds(new Redis(target, redisOptions(role))), role));
  return guardCluster(new Cluster(target.nodes, clusterOptions(role, target)), target.failoverMs, role);
}

/** A cluster client with its settled connect, a close that ends, node deadlines and the slot watch; BullMQ's duplicates of it get them too. */
function guardCluster(cluster: Cluster, failoverMs: number, role: ConnectionRole): Cluster {
  closeEnds(cluster);
  withSettledConnect(cluster);
  withClusterDeadline(cluster, failoverMs, role);
  watchCluster(cluster);
  const duplicate = cluster.duplicate.bind(cluster);
  cluster.duplicate = (nodes, options) => guardCluster(duplicate(nodes, options), failoverMs, role);
  return cluster;
}

/**
 * The database a redis:// URL names (its path, as ioredis reads it, or a `db` parameter), or why it names
 * none that can be used. ioredis would take a path it cannot read as a number for database 0.
 */
export function redisDatabaseOf(url: string): number | string {
  const u = new URL(url);
  const path = u.pathname === '/' ? '' : u.pathname.slice(1);
  const param = u.searchParams.get('db');
  const raw = path !== '' ? path : (param ?? '0');
  if (!/^\d{1,9}$/.test(raw)) return `the database (the URL's path) must be a whole number, 0 or more, e.g. redis://127.0.0.1:6379/0, not ${JSON.stringify(raw)}`;
  if (path !== '' && param !== null && param !== path) return `names database ${path} in its path and ${JSON.stringify(param)} in ?db=; give it once, as the path`;
  return Number(raw);
}

/** The error of a SELECT Redis refused (a database past its `databases`), as ioredis reports it. */
export function isRedisDatabaseError(err: unknown): boolean {
  return err instanceof Error && (err as { command?: { name?: unknown } }).command?.name === 'select';
}

/**
 * ioredis selects the URL's database (its path, e.g. /2) each time it connects, but when Redis refuses the
 * SELECT (a number past Redis's \`databases\`, 16 by default) it only emits the error and goes on, ready,
 * on database 0: every command would read and write another database than REDIS_URL names, and PING would
 * still answer. So such a connection is dropped before it is ready and tried again with the usual backoff:
 * commands wait or fail as in an outage, and the error (isRedisDatabaseError) says why. The connections
 * BullMQ duplicates from it do the same.
 */
function refuseUnselectedDatabase(redis: Redis): Redis {
  redis.on('error', (err) => {
    if (isRedisDatabaseError(err)) redis.disconnect(true);
  });
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = (override) => refuseUnselectedDatabase(duplicate(override));
  return redis;
}

/** Whether `redis` is a Redis Cluster client (ioredis marks both classes). */
export function isClusterClient(redis: RedisClient): redis is Cluster {
  return redis.isCluster;
}

/** The user, password and TLS of a redis:// URL, for the cluster's node connections. */
function credentialsOf(url: string): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  const u = new URL(url);
  return {
    ...(u.username && { username: decodeURIComponent(u.username) }),
    ...(u.password && { password: decodeURIComponent(u.password) }),
    ...(u.protocol === 'rediss:' && { tls: {} }),
  };
}

/** Reconnect quickly at first, then at most every 2 s, forever: a worker should outlive a Redis restart. */
function backoff(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 6), 2000);
}
