import type { Worker } from 'bullmq';
import { fetchCallsOf } from './fetch-calls.js';
import { within } from './within.js';

/**
 * What a stuck consumer's BullMQ Worker is doing, for the consumer watchdog's log line: its fetch loop's
 * state (private members, read defensively: each is left out when BullMQ no longer has it) and its two
 * connections' states (public getters), and the calls into its backend its fetch awaits (fetch-calls.ts).
 * Diagnostics only; nothing acts on it.
 */
export async function consumerState(worker: Worker): Promise<Record<string, unknown>> {
  const w = worker as unknown as Record<string, unknown>;
  const state: Record<string, unknown> = {};
  if ('waiting' in w) state.waiting = w.waiting !== null && w.waiting !== undefined;
  for (const k of ['drained', 'blockUntil', 'limitUntil', 'closing', 'paused'] as const) if (k in w) state[k] = w[k];
  const calls = fetchCallsOf(worker);
  if (calls.length > 0) state.fetchCalls = calls;
  const loop = w.mainLoopQueue as { numTotal?: () => number; numQueued?: () => number } | null | undefined;
  if (loop === null) state.mainLoop = 'none';
  else if (typeof loop?.numTotal === 'function') state.mainLoop = { total: loop.numTotal(), queued: loop.numQueued?.() };
  const backend = worker.getBackend() as unknown as { client?: Promise<unknown>; blockingClient?: Promise<unknown> };
  state.command = await clientState(backend.client);
  state.blocking = await clientState(backend.blockingClient);
  return state;
}

interface ClientLike {
  status?: string;
  commandQueue?: { length?: number };
  offlineQueue?: { length?: number };
  options?: { host?: string; port?: number };
  nodes?: (role: 'all') => ClientLike[];
}

/**
 * A client's status, and how many commands wait on it (sent, or queued while it reconnects); a cluster's
 * also each node connection's, where a command sent to a node that never answers waits.
 */
async function clientState(p: Promise<unknown> | undefined): Promise<unknown> {
  if (!p) return undefined;
  const c = (await within(p, 200)) as ClientLike | undefined;
  if (!c) return 'not handed out';
  const nodes = typeof c.nodes === 'function' ? c.nodes('all').map((n) => ({ node: `${n.options?.host}:${n.options?.port}`, status: n.status, sent: n.commandQueue?.length, offline: n.offlineQueue?.length })) : undefined;
  return { status: c.status, sent: c.commandQueue?.length, offline: c.offlineQueue?.length, ...(nodes && { nodes }) };
}
