import type { Worker } from 'bullmq';

/** What closing reads of BullMQ's Redis backend: its public `blockingConnection` (redis-queue-backend.d.ts) and that connection's public close. */
interface BlockingOfBackend {
  blockingConnection?: { close?: (force?: boolean) => Promise<void> };
}

/**
 * Closes `worker` as BullMQ's `close()` does (no new job taken; the jobs running finished and acknowledged
 * on its command connection, then that connection closed), but with its blocking connection closed at
 * once, by force, so a wait for a job (BZPOPMIN, up to drainDelay or 10 s) ends at once. Through BullMQ's
 * public API only: `close()`, `getBackend()`, the backend's `blockingConnection` and its `close(force)`.
 *
 * Why:
 * - **On a Redis Cluster** BullMQ's close drops the blocking connection to end the wait, as on one Redis,
 *   but its recovery of blocking cluster clients (the bzpopmin wrapper in redis-connection.js, turned off
 *   only when that connection itself is closed, after the running jobs) takes the failed wait for a broken
 *   cluster and connects the client again before the Worker's loop sees the failure. That connect meets the
 *   late close of the one just dropped and is aborted, and tickwork's settled connect (cluster-connect.ts in
 *   @tickwork/core) tries again about 0.1 s later: each Worker connected again only to be closed (measured
 *   with the settled connect's earlier 2.5 s wait for the aborted connect's nodes: 2.7 s from `shutting
 *   down` to exit, against 26 ms on one Redis). Closing the connection first turns the recovery off
 *   (BullMQ's own close does), so no connect is made at all.
 * - **A Worker whose getNextJob is called by hand** (autorun off: the public batch store) has no loop for
 *   BullMQ's close to interrupt: its close sends QUIT on the blocking connection, which Redis answers only
 *   once the wait is over, up to drainDelay later. Forced, the connection is dropped instead.
 *
 * Nothing is lost: the blocking connection carries only that wait, which pops the queue's wake-up marker
 * and no job (BullMQ's waitForJob); fetching, lock renewals and acknowledgements go on the command
 * connection. `close()` is called first, so the Worker is closing when its wait fails: it neither connects
 * again nor fetches. A BullMQ whose backend lacks these members is closed its own way.
 */
export function closeWorker(worker: Worker): Promise<void> {
  const closing = worker.close();
  const blocking = (worker.getBackend() as unknown as BlockingOfBackend).blockingConnection;
  // Its errors are the Worker's close's to report: that closes the connection again (a no-op once closing).
  if (typeof blocking?.close === 'function') blocking.close(true).catch(() => undefined);
  return closing;
}
