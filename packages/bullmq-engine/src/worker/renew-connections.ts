import type { Worker } from 'bullmq';
import { within } from './within.js';

/** What renewing reads of BullMQ's Redis backend: its public `client` and `blockingClient` getters (redis-queue-backend.d.ts). */
interface ConnectionsOfBackend {
  client?: Promise<unknown>;
  blockingClient?: Promise<unknown> | undefined;
}

/** The ioredis client (Redis or Cluster) members renewing uses: all public ioredis API. */
interface Renewable {
  status: string;
  zadd(key: string, score: number, member: string): Promise<unknown>;
  disconnect(reconnect?: boolean): void;
  connect(): Promise<unknown>;
  once(event: 'end', listener: () => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
}

/** How long renewing waits for a connection BullMQ has not handed out yet (one that never got ready). */
const RESOLVE_MS = 1000;
/**
 * How long it waits for a closed connection's `end`: ioredis destroys a socket still open `disconnectTimeout`
 * after closing it (500 ms on tickwork's connections, 2 s by default; a frozen Redis never closes its side),
 * and only then ends the connection.
 */
const END_MS = 2500;

/**
 * Drops `worker`'s sockets and makes them anew, through BullMQ's public backend getters only (the backend's
 * `client` and `blockingClient`), so it holds on either engine path. Resolves with how many connections
 * were renewed.
 *
 * - The command connection is reconnected in place (ioredis `disconnect(true)`): commands waiting on a dead
 *   socket are sent again on the new one (ioredis's own resend on reconnect; on a cluster, to the slot's
 *   master of now), so the jobs running go on.
 * - With `wake` (the fast path: the contract holds) the queue's wake-up marker is added after (wake()).
 * - The blocking connection is closed and connected again (`disconnect()`, then `connect()`). It carries only
 *   the Worker's wait for a job, which BullMQ retries. A reconnect in place would never end it: BullMQ resets
 *   a blocking connection whose wait overran by closing it and awaiting its `end`, and a connection
 *   reconnected meanwhile never ends, which left the Worker waiting for good (a failover under load,
 *   failover-silence.test.ts). Closed, it ends; whichever connect comes second (BullMQ's or this) is refused,
 *   which is harmless.
 */
export async function renewWorkerConnections(worker: Worker, opts: { wake?: boolean } = {}): Promise<number> {
  const backend = worker.getBackend() as unknown as ConnectionsOfBackend;
  let renewed = 0;
  const command = (backend.client && (await within(backend.client, RESOLVE_MS))) as Renewable | undefined;
  if (typeof command?.disconnect === 'function') {
    command.disconnect(true);
    renewed++;
  }
  const blocking = (backend.blockingClient && (await within(backend.blockingClient, RESOLVE_MS))) as Renewable | undefined;
  if (blocking && blocking !== command && typeof blocking.disconnect === 'function' && typeof blocking.connect === 'function') {
    await reopen(blocking);
    renewed++;
  }
  if (opts.wake && typeof command?.zadd === 'function') await within(wake(worker, command), RESOLVE_MS);
  return renewed;
}

/**
 * Adds the queue's wake-up marker, as BullMQ's addBaseMarkerIfNeeded does for a job made ready (its member
 * "0" at score 0; the include's digest is in the engine's contract, contract/scripts.ts), so the Worker's
 * next wait returns at once and it fetches. A wait closed by the renewal may have popped the marker of the
 * job it was waiting for, its reply lost with the socket: the Worker would then block a full BullMQ wait (up
 * to 10 s) with that job ready, and each renewal starts such a wait over (a failover under load,
 * failover-silence.test.ts: 25 s once). A spare marker costs the Worker one fetch that finds nothing.
 */
async function wake(worker: Worker, command: Renewable): Promise<void> {
  await command.zadd(worker.toKey('marker'), 0, '0').catch(() => undefined);
}

/** Closes `client` (its `end` is emitted) and connects it again; a client already closed is only connected. */
async function reopen(client: Renewable): Promise<void> {
  if (client.status !== 'end' && client.status !== 'wait') {
    let listener: (() => void) | undefined;
    const ended = new Promise<void>((resolve) => {
      listener = resolve;
      client.once('end', resolve);
    });
    client.disconnect();
    await within(ended, END_MS);
    if (listener) client.removeListener('end', listener);
  }
  // Not awaited to readiness: the Worker's next wait does that. A refusal (BullMQ connected it first) is fine.
  if (client.status === 'end' || client.status === 'wait') client.connect().catch(() => undefined);
}
