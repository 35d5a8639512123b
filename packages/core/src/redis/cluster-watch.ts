import type { Cluster, Redis } from 'ioredis';

/**
 * How often the process asks a live node who serves each slot. Half a second: a producer's command sent to a
 * frozen master waits until the watch sees the promotion, and CLUSTER SLOTS costs a node next to nothing.
 */
export const CLUSTER_WATCH_INTERVAL_MS = 500;

/** How long one poll waits for a node's answer before the next poll asks another. */
const POLL_TIMEOUT_MS = 400;

/**
 * The cluster clients of this process (every one createRedis made, and BullMQ's duplicates of them). One
 * poll for them all, not one per client: a worker holds a dozen.
 */
const clients = new Set<Cluster>();
let timer: NodeJS.Timeout | undefined;
let lastMasters: string | undefined;
/** When this process last saw a slot's master change (Date.now()), or 0. */
let changedAt = 0;
let turn = 0;
/**
 * Polls left that refresh every client again after a change: ioredis asks a random node for the slots, and
 * one that has not heard of the promotion yet (gossip takes a moment) would give the old map back.
 */
let refreshesLeft = 0;
const REFRESHES_AFTER_CHANGE = 3;
/** Nodes that did not answer a poll lately, and when: asked again only after SILENT_MS (a frozen node stays frozen). */
const silentSince = new WeakMap<Redis, number>();
const SILENT_MS = 10_000;

/**
 * Watches which master serves each slot (CLUSTER SLOTS on a live node, twice a second) and, when one
 * changes (a replica promoted), has every cluster client of the process refresh its slots at once and at
 * the next two polls (`refreshSlotsCache`, ioredis's own), so commands go to the promoted master within about a second
 * instead of waiting for a command to be refused (a frozen master refuses nothing: it does not answer).
 * Refreshing drops the old master's connection, and the commands waiting on it are sent again to the new one.
 */
export function watchCluster(cluster: Cluster): void {
  if (clients.has(cluster)) return;
  clients.add(cluster);
  cluster.once('end', () => {
    clients.delete(cluster);
    if (clients.size === 0) stop();
    // A client closed and connected again (BullMQ resets a stuck blocking connection so, and the worker's
    // consumer watchdog too) is watched again once it is back; one closed for good never is.
    cluster.once('ready', () => watchCluster(cluster));
  });
  if (!timer) {
    timer = setInterval(() => void poll(), CLUSTER_WATCH_INTERVAL_MS);
    // The watch never keeps a process alive on its own.
    timer.unref();
  }
}

/** Whether the watch refreshes `cluster`'s slots on a change (for tests; not exported by the package). */
export function watchesCluster(cluster: Cluster): boolean {
  return clients.has(cluster);
}

/**
 * When this process last saw a slot's master change (a failover), as Date.now(), or 0 if it never did. The
 * worker's consumer watchdog judges faster for a while after one: a consumer stuck by a failover is then likeliest.
 */
export function mastersChangedAt(): number {
  return changedAt;
}

function stop(): void {
  if (timer) clearInterval(timer);
  timer = undefined;
  lastMasters = undefined;
  refreshesLeft = 0;
}

let polling = false;

async function poll(): Promise<void> {
  if (polling) return;
  polling = true;
  try {
    const node = pickNode();
    if (!node) return;
    const masters = await slotMasters(node);
    if (masters === undefined) return void silentSince.set(node, Date.now());
    if (lastMasters !== undefined && masters !== lastMasters) {
      refreshesLeft = REFRESHES_AFTER_CHANGE;
      changedAt = Date.now();
    }
    lastMasters = masters;
    if (refreshesLeft > 0) {
      refreshesLeft--;
      for (const c of clients) if (c.status === 'ready') c.refreshSlotsCache();
    }
  } finally {
    polling = false;
  }
}

/** A ready node of a ready client, a different one each poll, one that did not fail to answer lately if there is one. */
function pickNode(): Redis | undefined {
  const now = Date.now();
  let nodes: Redis[] = [];
  for (const c of clients) {
    if (c.status !== 'ready') continue;
    for (const n of c.nodes('all')) if (n.status === 'ready') nodes.push(n);
    if (nodes.length > 0) break;
  }
  const answering = nodes.filter((n) => now - (silentSince.get(n) ?? 0) >= SILENT_MS);
  if (answering.length > 0) nodes = answering;
  if (nodes.length === 0) return undefined;
  turn = (turn + 1) % nodes.length;
  return nodes[turn];
}

/** Each slot range and its master (`first-last=host:port`), as one string; undefined when the node does not answer in time. */
async function slotMasters(node: Redis): Promise<string | undefined> {
  let timeout: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timeout = setTimeout(() => resolve(undefined), POLL_TIMEOUT_MS);
  });
  try {
    const reply = await Promise.race([node.call('CLUSTER', 'SLOTS').catch(() => undefined), late]);
    if (!Array.isArray(reply)) return undefined;
    return (reply as unknown[][])
      .map((shard) => {
        const master = shard[2] as unknown[] | undefined;
        return `${String(shard[0])}-${String(shard[1])}=${String(master?.[0])}:${String(master?.[1])}`;
      })
      .sort()
      .join(',');
  } finally {
    clearTimeout(timeout);
  }
}
