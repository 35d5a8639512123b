import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port tests pick from; the highest leaves room for a cluster-bus port (port + 10,000) below the ephemeral range. */
const LOWEST = 10_000;
/** Redis Cluster's bus port is its node's port plus this (redis-cluster.ts). */
export const CLUSTER_BUS_OFFSET = 10_000;

/**
 * A free TCP port on loopback for a test's server, picked at random below the kernel's range of ephemeral
 * ports, with its Redis Cluster bus port (10,000 above it) below that range too. Ports in the ephemeral range
 * are what the kernel hands to outgoing connections and what Docker publishes containers' ports on, so one
 * taken from there and bound a moment later by a test's `redis-server` or app can go to either meanwhile:
 * seen when the compose test ran beside the tests, a Redis Cluster node's port answered by something else.
 * Where that range leaves no room (or cannot be read), the kernel assigns the port, as before.
 */
export async function freePort(): Promise<number> {
  const highest = ephemeralLow() - CLUSTER_BUS_OFFSET - 1;
  if (highest - LOWEST >= 1000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = LOWEST + Math.floor(Math.random() * (highest - LOWEST + 1));
      if (await bindable(port)) return port;
    }
  }
  return kernelPort();
}

/** The first port of the kernel's ephemeral range (Linux; elsewhere the IANA range's first, 49152). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 49_152;
  } catch {
    return 49_152;
  }
}

/** Whether `port` can be listened on at loopback right now. */
export function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A port the kernel assigns. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server on a port from `pick`, and on another when that port was taken between the pick and the
 * server's bind (`taken(err)` says so): tests start servers side by side, and a port is only checked free,
 * not held. Five tries at most; any other failure is thrown at once.
 */
export async function startOnFreePort<T>(
  start: (port: number) => Promise<T>,
  taken: (err: unknown) => boolean,
  pick: () => Promise<number> = freePort,
): Promise<{ port: number; started: T }> {
  for (let attempt = 1; ; attempt++) {
    const port = await pick();
    try {
      return { port, started: await start(port) };
    } catch (err) {
      if (attempt >= 5 || !taken(err)) throw err;
    }
  }
}
