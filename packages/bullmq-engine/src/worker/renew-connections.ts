import type { Worker } from 'bullmq';

/** What renewing reads of BullMQ's Redis backend: its public `client` and `blockingClient` getters (redis-queue-backend.d.ts). */
interface ConnectionsOfBackend {
  client?: Promise<unknown>;
  blockingClient?: Promise<unknown> | undefined;
}

/** How long renewing waits for a connection BullMQ has not handed out yet (one that never got ready). */
const RESOLVE_MS = 1000;

/**
 * Drops `worker`'s sockets and makes them anew (ioredis `disconnect(true)`): the connection its commands go
 * on and its blocking one. Commands waiting on a dead socket are then sent again on the new one (ioredis's
 * own resend on reconnect; on a cluster, to the slot's master of now). Public BullMQ API only (the
 * backend's `client` and `blockingClient`), so it holds on either engine path. Resolves with how many
 * connections were renewed.
 */
export async function renewWorkerConnections(worker: Worker): Promise<number> {
  const backend = worker.getBackend() as unknown as ConnectionsOfBackend;
  let renewed = 0;
  for (const pending of [backend.client, backend.blockingClient]) {
    const client = pending && (await within(pending, RESOLVE_MS));
    const c = client as { disconnect?: (reconnect?: boolean) => void } | undefined;
    if (typeof c?.disconnect === 'function') {
      c.disconnect(true);
      renewed++;
    }
  }
  return renewed;
}

function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([p.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}
