import type { Cluster } from 'ioredis';

/**
 * How long a cluster's connect() waits for the node connections it still holds to end (drained): ioredis ends
 * each on its socket's close, and destroys a socket still open after `disconnectTimeout`
 * (DISCONNECT_TIMEOUT_MS, connection.ts: a frozen node never closes its side). A bound, with room for a
 * starved event loop and for a client made elsewhere with ioredis's default (2 s).
 */
const DRAIN_MS = 2500;
/** Attempts after the first when a connect is aborted by a stale close (see withSettledConnect). */
const RETRIES = 4;
const LIVE = new Set(['connecting', 'connect', 'ready']);
/** What ioredis's Cluster.connect() rejects with when a close arrived while it was connecting. */
const STALE_ABORT = /^(Connection is aborted|None of startup nodes is available)$/;

/**
 * An ioredis Cluster whose connect() cannot be wedged by the disconnect before it.
 *
 * ioredis closes a cluster's node connections asynchronously. A connect() made before they have all ended
 * (BullMQ's reconnectCluster does `disconnect(false)` then `connect()` at once; so does a heal) meets their
 * late `close`: the close handler of the earlier connect sees the client as closed on purpose and ends it,
 * the connect is rejected ("Connection is aborted") and nothing connects it again, or the new connect
 * reuses node connections that are ending. The client is then left closed with no node: its commands wait
 * in the offline queue for good and a later disconnect never emits `end`, which is what BullMQ awaits to
 * reset or close a blocking connection. A worker so wedged takes no job and cannot shut down. Startup
 * nodes given by name (Docker Compose, Kubernetes) make it likely: the name lookup lets the close arrive
 * first (`pnpm test:compose`, cluster-connect.test.ts).
 *
 * So connect() first waits (up to DRAIN_MS) for the node connections the client still holds to end (a quit
 * leaves them in place until their sockets close; a disconnect lets go of them at once, and only their late
 * close is left, which the retries meet), and a connect aborted by a stale close is made again (a few
 * times, backing off) unless the client was closed meanwhile by its owner or another connect got it going.
 * And it settles once the client is ready or ended, even where ioredis's own connect never would
 * (settledByReadyOrEnd).
 *
 * Public ioredis API only: connect, disconnect, quit, status, nodes. (A close of a client with no node that
 * never ends is close-ends.ts's.)
 */
export function withSettledConnect(cluster: Cluster): Cluster {
  let closes = 0;
  const disconnect = cluster.disconnect.bind(cluster);
  cluster.disconnect = (reconnect = false) => {
    if (!reconnect) closes++;
    disconnect(reconnect);
  };
  const quit = cluster.quit.bind(cluster);
  cluster.quit = ((callback?: Parameters<Cluster['quit']>[0]) => {
    closes++;
    return quit(callback);
  }) as Cluster['quit'];
  const connect = cluster.connect.bind(cluster);
  cluster.connect = async () => {
    const mark = closes;
    for (let attempt = 0; ; attempt++) {
      if (!LIVE.has(cluster.status)) await drained(cluster, DRAIN_MS);
      try {
        return await settledByReadyOrEnd(cluster, connect());
      } catch (err) {
        const stale = err instanceof Error && STALE_ABORT.test(err.message);
        if (!stale || attempt >= RETRIES || closes !== mark || LIVE.has(cluster.status)) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
        if (closes !== mark || LIVE.has(cluster.status)) throw err;
      }
    }
  };
  return cluster;
}

/**
 * `connecting`, settled as well by the cluster getting ready or ending. ioredis's Cluster.connect() never
 * settles when its ready check fails (CLUSTER INFO says `cluster_state:fail`, as it does during a failover
 * until the promotion): it reconnects by itself and leaves the promise of that connect pending for good.
 * BullMQ awaits such a connect to reset a worker's blocking connection whose wait overran, and the Worker's
 * fetch then waits for good while the client itself gets ready (issue 37 §2: a consumer held with every
 * connection ready and no command waiting; cluster-connect.test.ts). An `end` that follows reconnecting
 * rejects, after a turn, so a connect's own rejection (which the retries above look at) comes first.
 */
function settledByReadyOrEnd(cluster: Cluster, connecting: Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      cluster.removeListener('ready', onReady);
      cluster.removeListener('reconnecting', onReconnecting);
      cluster.removeListener('end', onEnd);
    };
    const onReady = () => {
      done();
      resolve();
    };
    const onEnd = () => {
      done();
      setImmediate(() => reject(new Error('Connection is closed.')));
    };
    // Only an end after the client went reconnecting (its connect abandoned) settles it: an earlier
    // disconnect's late end, or the end of a connect that rejects by itself, is not this connect's.
    const onReconnecting = () => cluster.once('end', onEnd);
    cluster.once('ready', onReady);
    cluster.once('reconnecting', onReconnecting);
    connecting.then(
      () => (done(), resolve()),
      (err: unknown) => (done(), reject(err)),
    );
  });
}

/**
 * Resolves once the cluster holds no node connection that can still end, or after `ms`. Only one that was
 * opened can end: one never opened (`wait`: ioredis opens a node's connection at its first command) has no
 * socket to close and never ends by itself. A connect aborted by a stale close leaves its startup nodes'
 * connections so (it makes them before asking for the slots, which it does on connections of its own), and
 * waiting for them sat out the whole `ms` before the next try (2.6 s against 0.1 s, cluster-connect.test.ts);
 * the next connect takes them up as they are.
 */
function drained(cluster: Cluster, ms: number): Promise<void> {
  if (!holdsOpened(cluster)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      cluster.removeListener('-node', onNode);
      resolve();
    };
    const onNode = () => {
      if (!holdsOpened(cluster)) done();
    };
    const timer = setTimeout(done, ms);
    cluster.on('-node', onNode);
  });
}

/** Whether the cluster holds a node connection that was opened and has not ended (its `-node` is still to come). */
function holdsOpened(cluster: Cluster): boolean {
  return cluster.nodes('all').some((node) => node.status !== 'wait');
}
