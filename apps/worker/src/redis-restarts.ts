import { redisRestarts, type Logger, type RedisClient } from '@tickwork/core';
import type { Cluster, Redis } from 'ioredis';
import { onReadyCheck, type ServerInfo } from '@tickwork/bullmq-engine';

export interface RedisRestartWatchOptions {
  /** The worker's command connections (the ledger's first: its steps are what a restart may have lost). */
  connections: readonly RedisClient[];
  log: Logger;
  /** Hands every run this process is running back (RunningJobs.abortAll); returns how many there were. */
  handBack(): number;
}

export interface RedisRestartWatch {
  stop(): void;
}


/**
 * Watches for a Redis that restarted under the worker: a connection that reconnects and finds a server
 * whose INFO `run_id` differs from the one it saw before. A restarted Redis may have lost writes it had
 * acknowledged (AOF with `appendfsync everysec` loses up to about 2 s of them), Redis steps' effects with
 * their records; a run that went on in this process would believe those steps recorded and never redo
 * them. So on a restart every run this process is running is handed back (RunningJobs.abortAll →
 * RedisRestartedError → JobRun.handBack): its next delivery skips the steps whose records survived and
 * redoes the ones lost, and no attempt is spent. Logged once per restart (warn, with the count) and
 * counted in `tickwork_worker_redis_restarts_total`.
 *
 * The run_id is read from ioredis's own ready check (the INFO it sends on every connect; onReadyCheck,
 * @tickwork/bullmq-engine, which owns that ioredis internal), in the same callback that then sends the
 * commands queued while Redis was away: the runs are aborted before any of
 * those replies (a step refused for a record the restart lost, say) can end an attempt as a failure, and the
 * check costs no round trip and nothing per job. Where a connection's connector cannot be wrapped (another
 * ioredis), an `INFO server` on each 'ready' does the same a round trip later.
 *
 * On a Redis Cluster each master node has its own run_id, kept by node address: a master that restarts in
 * place hands the runs back (all of them: which runs' keys lived on it is not tracked). A node reporting
 * itself a replica is only noted; a failover to a replica at another address is not a restart here (see
 * docs/exactly-once.md).
 */
export function watchRedisRestarts(opts: RedisRestartWatchOptions): RedisRestartWatch {
  const runIds = new Map<string, string>();
  const hooked = new WeakSet<Redis>();
  const undo: (() => void)[] = [];
  let stopped = false;

  const observe = (node: Redis, info: ServerInfo) => {
    const runId = info.run_id;
    if (stopped || !runId) return;
    const address = addressOf(node);
    const before = runIds.get(address);
    runIds.set(address, runId);
    if (before === undefined || before === runId || info.role === 'slave') return;
    try {
      const runs = opts.handBack();
      redisRestarts.inc();
      opts.log.warn(
        { redis: address, runs, runIdBefore: before, runId },
        'Redis restarted (a new run_id) and may have lost writes it had acknowledged; the runs in progress are handed back to run again from their recorded steps',
      );
    } catch (err) {
      // Never into ioredis's connect path: the connection must come up whatever happens here.
      opts.log.error({ err }, 'could not hand the runs back after a Redis restart');
    }
  };

  const watchNode = (node: Redis) => {
    if (hooked.has(node)) return;
    hooked.add(node);
    const undoHook = onReadyCheck(node, (info) => observe(node, info));
    if (undoHook) undo.push(undoHook);
    else {
      const onReady = () => void infoOf(node).then((info) => observe(node, info), () => undefined);
      node.on('ready', onReady);
      undo.push(() => void node.off('ready', onReady));
    }
    // Already connected: the run_id to compare the next connect's with.
    if (node.status === 'ready') void infoOf(node).then((info) => observe(node, info), () => undefined);
  };

  for (const conn of opts.connections) {
    if (!conn.isCluster) {
      watchNode(conn as Redis);
      continue;
    }
    const cluster = conn as Cluster;
    // A cluster makes a connection per node, and a new one when a node comes back: each is watched.
    for (const node of cluster.nodes('all')) watchNode(node);
    const onNode = (node: Redis) => watchNode(node);
    cluster.on('+node', onNode);
    undo.push(() => void cluster.off('+node', onNode));
  }

  return {
    stop() {
      stopped = true;
      for (const u of undo.splice(0)) u();
    },
  };
}

/** A node's address, the key its run_id is kept under. */
function addressOf(node: Redis): string {
  return `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`;
}

/** The fields of INFO's server and replication sections (run_id, role). */
async function infoOf(node: Redis): Promise<ServerInfo> {
  const text = `${await node.info('server')}\r\n${await node.info('replication')}`;
  const info: ServerInfo = {};
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) info[line.slice(0, at)] = line.slice(at + 1);
  }
  return info;
}
