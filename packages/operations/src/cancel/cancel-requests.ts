import type { RedisClient } from '@tickwork/core';
import { TickworkError } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';

/**
 * Cancel requests for jobs, shared by the CLI and the dashboard (which make them) and the workers (which
 * carry them out).
 *
 * Pending requests live in one hash, `<prefix>:meta:cancel-requests` (field: the job, value: who, why,
 * until when), rather than a key per job: a worker starting up reads every pending request with one
 * HGETALL instead of a SCAN over the whole keyspace, then follows new ones on one pub/sub channel
 * (`<prefix>:meta:cancel`). So a job start checks an in-memory map and costs no Redis round trip: cancel
 * requests are rare, job starts are the hot path. A request leaves the hash when it has taken effect
 * (so an operator's retry of the cancelled job runs), or when it expires (pruned at each request and at
 * each worker start).
 */
export const CANCEL_REQUEST_TTL_MS = 24 * 3600_000;
/** A failed job's reason starts with this when it was cancelled: the DLQ move and the metrics look for it. */
export const CANCELLED_REASON_PREFIX = 'cancelled by ';
const MAX_REASON_LENGTH = 500;

export const cancelRequestsKey = (prefix: string): string => `${prefix}:meta:cancel-requests`;
export const cancelChannel = (prefix: string): string => `${prefix}:meta:cancel`;

export interface CancelRequest {
  queue: string;
  jobId: string;
  /** Who asked: a dashboard user or `cli:<os user>`. */
  by: string;
  reason?: string | undefined;
  requestedAt: string;
  /** Epoch ms after which the request is void. */
  expiresAt: number;
}

/** What travels on the channel: a new request, or one that took effect (every worker forgets it). */
export type CancelMessage = { type: 'request'; request: CancelRequest } | { type: 'done'; queue: string; jobId: string };

export class JobNotFoundError extends TickworkError {
  override name = 'JobNotFoundError';
  constructor(queue: string, jobId: string) {
    super(`no job "${jobId}" in queue "${queue}" (never added, or already removed by its retention)`);
  }
}

export class JobNotCancellableError extends TickworkError {
  override name = 'JobNotCancellableError';
  constructor(queue: string, jobId: string, state: string) {
    super(`job "${jobId}" in queue "${queue}" has already ${state === 'completed' ? 'completed' : 'failed'}; there is nothing to cancel`);
  }
}

export class CancelInputError extends TickworkError {
  override name = 'CancelInputError';
}

/** The failed reason a cancelled run ends with: `cancelled by <who>[: <reason>]`. */
export function cancellationReason(req: Pick<CancelRequest, 'by' | 'reason'>): string {
  return `${CANCELLED_REASON_PREFIX}${req.by}${req.reason ? `: ${req.reason}` : ''}`;
}

export function isCancellationReason(failedReason: string | undefined | null): boolean {
  return typeof failedReason === 'string' && failedReason.startsWith(CANCELLED_REASON_PREFIX);
}

const fieldOf = (queue: string, jobId: string): string => JSON.stringify([queue, jobId]);

function parseRequest(raw: string): CancelRequest | undefined {
  try {
    const r = JSON.parse(raw) as Partial<CancelRequest>;
    if (typeof r.queue !== 'string' || typeof r.jobId !== 'string' || typeof r.by !== 'string' || typeof r.expiresAt !== 'number') return undefined;
    return { queue: r.queue, jobId: r.jobId, by: r.by, reason: typeof r.reason === 'string' ? r.reason : undefined, requestedAt: String(r.requestedAt), expiresAt: r.expiresAt };
  } catch {
    return undefined;
  }
}

/** A message from the channel, or undefined for anything else published there. */
export function parseCancelMessage(raw: string): CancelMessage | undefined {
  try {
    const m = JSON.parse(raw) as { type?: unknown; request?: unknown; queue?: unknown; jobId?: unknown };
    if (m.type === 'done' && typeof m.queue === 'string' && typeof m.jobId === 'string') return { type: 'done', queue: m.queue, jobId: m.jobId };
    if (m.type === 'request') {
      const request = parseRequest(JSON.stringify(m.request));
      return request && { type: 'request', request };
    }
  } catch {
    // not ours
  }
  return undefined;
}

/** Every pending, unexpired request; expired and unreadable ones are deleted on the way. */
export async function loadCancelRequests(redis: RedisClient, prefix: string, now = Date.now()): Promise<CancelRequest[]> {
  const all = await redis.hgetall(cancelRequestsKey(prefix));
  const live: CancelRequest[] = [];
  const dead: string[] = [];
  for (const [field, raw] of Object.entries(all)) {
    const r = parseRequest(raw);
    if (r && r.expiresAt > now) live.push(r);
    else dead.push(field);
  }
  if (dead.length > 0) await redis.hdel(cancelRequestsKey(prefix), ...dead);
  return live;
}

export interface RequestCancelOptions {
  queues: QueueSet;
  queue: string;
  jobId: string;
  by: string;
  reason?: string | undefined;
  now?: number;
}

/**
 * Asks the workers to cancel a job: a running one has its handler's signal aborted by the worker that
 * holds it; a waiting, delayed or prioritised one is failed as cancelled when a worker takes it, without
 * running. Throws JobNotFoundError for an unknown id and JobNotCancellableError for a finished job.
 * Returns the job's state at the time of the request.
 */
export async function requestCancel(opts: RequestCancelOptions): Promise<{ state: string; request: CancelRequest }> {
  const reason = opts.reason?.trim() || undefined;
  if (reason && reason.length > MAX_REASON_LENGTH) throw new CancelInputError(`the reason is ${reason.length} characters; at most ${MAX_REASON_LENGTH}`);
  if (opts.jobId === '') throw new CancelInputError('the job id is empty');
  const queue = opts.queues.get(opts.queue);
  // An id that names one of the queue's own keys (`wait`, `meta`...) is no job of it.
  const job = await queue.getJob(opts.jobId).catch((err: Error) => {
    if (err.message.startsWith('WRONGTYPE')) return undefined;
    throw err;
  });
  if (!job) throw new JobNotFoundError(opts.queue, opts.jobId);
  const state = await job.getState();
  if (state === 'unknown') throw new JobNotFoundError(opts.queue, opts.jobId);
  if (state === 'completed' || state === 'failed') throw new JobNotCancellableError(opts.queue, opts.jobId, state);
  const now = opts.now ?? Date.now();
  // A delayed job is failed as cancelled when it comes due, so its request must outlive the delay.
  const dueIn = state === 'delayed' ? Math.max(0, job.timestamp + (job.delay ?? 0) - now) : 0;
  const request: CancelRequest = { queue: opts.queue, jobId: opts.jobId, by: opts.by, reason, requestedAt: new Date(now).toISOString(), expiresAt: now + dueIn + CANCEL_REQUEST_TTL_MS };
  const redis = opts.queues.redis;
  const prefix = opts.queues.prefix;
  await loadCancelRequests(redis, prefix, now); // prunes expired requests: the hash stays small
  await redis.hset(cancelRequestsKey(prefix), fieldOf(opts.queue, opts.jobId), JSON.stringify(request));
  await redis.publish(cancelChannel(prefix), JSON.stringify({ type: 'request', request } satisfies CancelMessage));
  return { state, request };
}

/** The request took effect: removed, and every worker told to forget it. Returns false when it was already gone. */
export async function finishCancelRequest(redis: RedisClient, prefix: string, queue: string, jobId: string): Promise<boolean> {
  const removed = await redis.hdel(cancelRequestsKey(prefix), fieldOf(queue, jobId));
  await redis.publish(cancelChannel(prefix), JSON.stringify({ type: 'done', queue, jobId } satisfies CancelMessage));
  return removed === 1;
}

/** The pending requests for some jobs of a queue (the dashboard marks them), in one HMGET. */
export async function pendingCancels(redis: RedisClient, prefix: string, queue: string, jobIds: readonly string[]): Promise<Map<string, CancelRequest>> {
  const out = new Map<string, CancelRequest>();
  if (jobIds.length === 0) return out;
  const raw = await redis.hmget(cancelRequestsKey(prefix), ...jobIds.map((id) => fieldOf(queue, id)));
  raw.forEach((r, i) => {
    const req = r === null ? undefined : parseRequest(r);
    const id = jobIds[i];
    if (req && id !== undefined && req.expiresAt > Date.now()) out.set(id, req);
  });
  return out;
}
