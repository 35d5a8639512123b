import type { Cluster, Command, Redis } from 'ioredis';

/** connection.ts's ConnectionRole (repeated here: connection.ts imports this module). */
type Role = 'blocking' | 'command';

/** Default REDIS_COMMAND_TIMEOUT_MS: how long a reply may be awaited on one socket before it counts as dead. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5000;

/**
 * The process's REDIS_COMMAND_TIMEOUT_MS. Process-wide rather than passed to each createRedis: an app makes
 * its connections in a dozen places (and BullMQ duplicates them), and every one must get the same deadline.
 * openAppContext and the CLI set it from their env before they connect.
 */
let commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS;

export function setCommandTimeout(ms: number): void {
  commandTimeoutMs = ms;
}

export function commandTimeout(): number {
  return commandTimeoutMs;
}

/** The message of a command that got no reply within the deadline (ioredis's own, so callers may match it). */
export const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * Emitted (as an `error` event, where the connection has listeners) when a socket is dropped for a reply
 * that did not come: the app's outage log then reports the outage as for any connection loss.
 */
export class RedisDeadlineError extends Error {
  override name = 'RedisDeadlineError';
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no reply within ${ms} ms (REDIS_COMMAND_TIMEOUT_MS): the socket was dropped and is made anew`);
  }
}

function dropped(conn: Redis, ms: number): void {
  if (conn.listenerCount('error') > 0) conn.emit('error', new RedisDeadlineError(ms));
}

/** Whether `err` is a command that got no reply within REDIS_COMMAND_TIMEOUT_MS. */
export function isCommandTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === COMMAND_TIMED_OUT;
}

/**
 * Commands that wait on purpose (BullMQ's BZPOPMIN waits up to 10 s for a job): no deadline shorter than
 * their block time may apply. BullMQ bounds its own waits and the worker's watchdog watches the rest.
 */
const BLOCKING = new Set(['blpop', 'brpop', 'brpoplpush', 'blmove', 'blmpop', 'bzpopmin', 'bzpopmax', 'bzmpop', 'wait', 'waitaof', 'subscribe', 'psubscribe', 'ssubscribe', 'monitor']);

function waitsOnPurpose(command: Command): boolean {
  const name = command.name.toLowerCase();
  if (BLOCKING.has(name)) return true;
  return (name === 'xread' || name === 'xreadgroup') && command.args.some((a) => String(a).toUpperCase() === 'BLOCK');
}

/**
 * One Redis (not a cluster's node): a command with no reply within the deadline fails with "Command timed
 * out" and its socket is dropped and made anew (ioredis #559: without this, commands sent to a frozen
 * Redis wait until the OS gives the socket up, minutes later). A command that timed out is not sent again
 * after the reconnect (ioredis would): its caller was told it failed. Duplicates (BullMQ makes its Worker's
 * connections so) get the same. On a `blocking` connection (a worker's, which outlives a Redis restart by
 * waiting) the deadline starts only once a command is written to a ready socket: a command waiting for a
 * reconnect waits for it, as before; on a `command` connection it starts at once, so no caller waits on a
 * Redis that never comes back (the CLI, a producer).
 */
export function withCommandDeadline(redis: Redis, role: Role): Redis {
  const send = redis.sendCommand.bind(redis);
  let droppedAt = 0;
  redis.sendCommand = (command: Command, stream?: Parameters<Redis['sendCommand']>[1]) => {
    if (command.isSettled) return command.promise;
    const ms = commandTimeoutMs;
    if (ms > 0 && !waitsOnPurpose(command) && (role === 'command' || redis.status === 'ready')) {
      const reject = command.reject;
      command.reject = (err: Error) => {
        // Once per deadline at most: every command queued on the dead socket times out at about the same time.
        if (err.message === COMMAND_TIMED_OUT && (redis.status === 'ready' || redis.status === 'connect') && Date.now() - droppedAt >= ms) {
          droppedAt = Date.now();
          dropped(redis, ms);
          redis.disconnect(true);
        }
        reject(err);
      };
      command.setTimeout(ms);
    }
    return send(command, stream);
  };
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = (override) => withCommandDeadline(duplicate(override), role);
  return redis;
}

/** The node connection a command was last written to, so a late timer does not drop a node it left. */
const lastNodeOf = new WeakMap<Command, Redis>();

/**
 * A cluster: a command written to a node that has not replied within the deadline drops that node's
 * socket. The cluster then fails the node's commands as "Connection is closed", refreshes its slots and
 * sends them again, to the promoted replica once there is one, within the failover budget
 * (REDIS_CLUSTER_FAILOVER_MS, clusterOptions). On a `command` connection a command fails ("Command timed
 * out") after the failover budget plus one deadline, wherever it waits, so no caller waits forever on a
 * cluster that does not come back. (Duplicates: see guardCluster, connection.ts.)
 */
export function withClusterDeadline(cluster: Cluster, failoverMs: number, role: Role): Cluster {
  cluster.on('+node', (node: Redis) => watchNode(node));
  for (const node of cluster.nodes('all')) watchNode(node);
  const send = cluster.sendCommand.bind(cluster);
  cluster.sendCommand = (command: Command, stream?: Parameters<Cluster['sendCommand']>[1], node?: unknown) => {
    const ms = commandTimeoutMs;
    if (ms > 0 && role === 'command' && !waitsOnPurpose(command)) command.setTimeout(failoverMs + ms);
    return send(command, stream, node);
  };
  return cluster;
}

const watchedNodes = new WeakSet<Redis>();

function watchNode(node: Redis): void {
  if (watchedNodes.has(node)) return;
  watchedNodes.add(node);
  const send = node.sendCommand.bind(node);
  node.sendCommand = (command: Command, stream?: Parameters<Redis['sendCommand']>[1]) => {
    const ms = commandTimeoutMs;
    if (ms > 0 && !command.isSettled && !waitsOnPurpose(command)) {
      lastNodeOf.set(command, node);
      const timer = setTimeout(() => {
        if (command.isSettled || lastNodeOf.get(command) !== node) return;
        // Not reconnected: a cluster's node connection is made anew by the cluster, for the slot's owner.
        if (node.status === 'end') return;
        dropped(node, ms);
        node.disconnect();
      }, ms);
      timer.unref();
      command.promise.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    }
    return send(command, stream);
  };
}
