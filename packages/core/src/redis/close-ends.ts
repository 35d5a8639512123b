import type { Cluster, Redis } from 'ioredis';

/**
 * A client whose close always ends: `disconnect()` and `quit()` emit `close` and `end` and leave it `end`,
 * whatever state its connection was in.
 *
 * ioredis ends a close from the socket's (a cluster: every node connection's) own close. A client with no
 * socket has nothing to close, and a bare one then never ends:
 * - one Redis `reconnecting` (its socket lost, the next try pending) stays `reconnecting` with no try
 *   pending;
 * - a cluster with no node connection (reconnecting after it lost every node, as in a failover or a frozen
 *   master, or connecting while its startup names are looked up) stays `disconnecting`.
 * Either way it never emits the `end` BullMQ awaits to reset a blocking connection whose wait overran (its
 * Worker's fetch loop waits with it, taking no job) or to close it (the Worker cannot shut down), and the
 * commands it is given queue for good (close-ends.test.ts, cluster-connect.test.ts).
 *
 * Such a client is closed as one not yet connected (status `wait`), which ioredis closes at once. A
 * `disconnect(true)` (reconnect) is left to ioredis: it reconnects by its retry strategy, as a closed
 * cluster does; one Redis reconnecting has its next try pending already. Public ioredis API only:
 * disconnect, quit, nodes and the status field (read, and set to `wait` for a client with nothing to close).
 */
export function closeEnds<T extends Redis | Cluster>(client: T): T {
  /** How a close goes: as ioredis does it, from `wait` (nothing to close), or not at all (a cluster already ended). */
  const closing = (reconnect: boolean): 'as-is' | 'from-wait' | 'ended' => {
    if (!client.isCluster) return client.status === 'reconnecting' && !reconnect ? 'from-wait' : 'as-is';
    if (client.status === 'wait' || (client as Cluster).nodes('all').length > 0) return 'as-is';
    return client.status === 'end' && !reconnect ? 'ended' : 'from-wait';
  };
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (reconnect = false) => {
    const how = closing(reconnect);
    if (how === 'ended') return;
    if (how === 'from-wait') client.status = 'wait';
    disconnect(reconnect);
  };
  const quit = client.quit.bind(client) as Redis['quit'];
  client.quit = ((callback?: Parameters<Redis['quit']>[0]) => {
    const how = closing(false);
    if (how === 'as-is') return quit(callback);
    // No socket to send QUIT on: closed at once, as a client not yet connected is.
    if (how === 'from-wait') {
      client.status = 'wait';
      disconnect(false);
    }
    callback?.(null, 'OK');
    return Promise.resolve('OK' as const);
  }) as T['quit'];
  if (!client.isCluster) {
    // A cluster's duplicates are guarded by guardCluster (connection.ts); one Redis's here (BullMQ makes its Worker's connections so).
    const redis = client as Redis;
    const duplicate = redis.duplicate.bind(redis);
    redis.duplicate = (override) => closeEnds(duplicate(override));
  }
  return client;
}
