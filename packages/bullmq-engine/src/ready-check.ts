import type { Redis } from 'ioredis';

/** A server's INFO fields, as ioredis's ready check parses them (run_id, role, ...). */
export type ServerInfo = Record<string, string | undefined>;

/** The part of an ioredis connection's connector the hook wraps: `check` is given the ready check's INFO. */
interface ReadyCheckConnector {
  check(info: ServerInfo): boolean;
}

/**
 * Calls `seen` with the INFO of every server `node` connects to from now on, from ioredis's own ready check
 * (the INFO it sends on every connect), in the callback that then sends the commands queued while the
 * server was away: a caller acts before any of their replies arrive, at no round trip's cost. Uses ioredis's
 * private `connector.check` (named in contract/instance.test.ts and docs/upgrading-bullmq.md). Returns how
 * to undo it, or undefined where the connector cannot be wrapped (another ioredis, the ready check off):
 * the caller then reads INFO itself on each 'ready', a round trip later.
 */
export function onReadyCheck(node: Redis, seen: (info: ServerInfo) => void): (() => void) | undefined {
  const connector = (node as unknown as { connector?: Partial<ReadyCheckConnector> }).connector;
  const check = connector?.check;
  if (!connector || typeof check !== 'function' || node.options.enableReadyCheck === false) return undefined;
  connector.check = (info: ServerInfo) => {
    seen(info);
    return check.call(connector, info);
  };
  return () => void (connector.check = check);
}
