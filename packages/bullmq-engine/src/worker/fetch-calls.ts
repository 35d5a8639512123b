import type { Worker } from 'bullmq';

/** The backend calls a Worker's fetch loop awaits (BullMQ's public IQueueBackend, `worker.getBackend()`). */
const FETCH_CALLS = ['waitForJob', 'reconnectBlocking', 'moveToActive'] as const;
type FetchCall = (typeof FETCH_CALLS)[number];

const inFlight = new WeakMap<Worker, Map<number, { call: FetchCall; since: number }>>();
let nextId = 0;

/**
 * Notes each call of `worker`'s fetch loop into its backend while it is in flight, for the consumer
 * watchdog's log line (fetchCallsOf): a consumer whose fetch never returns shows which call holds it and for
 * how long. Costs two map writes a fetch. Returns `worker`.
 */
export function trackFetchCalls<W extends Worker>(worker: W): W {
  const backend = worker.getBackend() as unknown as Record<FetchCall, ((...args: unknown[]) => Promise<unknown>) | undefined>;
  const calls = new Map<number, { call: FetchCall; since: number }>();
  inFlight.set(worker, calls);
  for (const call of FETCH_CALLS) {
    const original = backend[call];
    if (typeof original !== 'function') continue;
    backend[call] = function (this: unknown, ...args: unknown[]) {
      const id = nextId++;
      calls.set(id, { call, since: Date.now() });
      return original.apply(this, args).finally(() => calls.delete(id));
    };
  }
  return worker;
}

/** The fetch calls `worker` awaits now, each with how long it has been in flight. */
export function fetchCallsOf(worker: Worker): { call: FetchCall; forMs: number }[] {
  const now = Date.now();
  return [...(inFlight.get(worker)?.values() ?? [])].map(({ call, since }) => ({ call, forMs: now - since }));
}
