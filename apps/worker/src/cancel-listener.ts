import { cancelChannel, finishCancelRequest, loadCancelRequests, parseCancelMessage, type CancelRequest } from '@tickwork/operations';
import { createRedis, type Logger, type RedisOutageLog, type RedisClient, type RedisTarget } from '@tickwork/core';
import { JobCancelledError } from './errors.js';

export interface CancelListenerOptions {
  /** Where Redis is (REDIS_URL or the cluster), for the connections this opens. */
  redisTarget: RedisTarget;
  /** A command connection: the subscriber connection can run nothing but (un)subscribe. */
  redis: RedisClient;
  prefix: string;
  log: Logger;
  outage?: RedisOutageLog | undefined;
  /** Aborts the job if this process runs it (RunningJobs.cancel); true when it did. */
  cancelRunning(queue: string, jobId: string, reason: string): boolean;
}

export interface CancelListener {
  /** Resolved once the pending requests have been read at start; a job start waits for it. */
  readonly ready: Promise<void>;
  readonly loaded: boolean;
  /** The pending request for this job, from memory: a job start costs no Redis round trip. */
  pending(queue: string, jobId: string): CancelRequest | undefined;
  /** The request took effect here: forgotten in this process, deleted, and every other worker told. */
  finished(queue: string, jobId: string): Promise<void>;
  close(): void;
}

const keyOf = (queue: string, jobId: string): string => JSON.stringify([queue, jobId]);

/**
 * One subscriber connection per worker process (not per job) follows the cancel channel; the pending
 * requests are read once at start and again after every reconnect (messages sent while the connection
 * was down are lost, the hash is not). A request for a job this process is running aborts it at once;
 * any other request is kept in memory until it takes effect somewhere or expires, so a job that starts
 * later is failed as cancelled without running.
 */
export function startCancelListener(opts: CancelListenerOptions): CancelListener {
  const pending = new Map<string, CancelRequest>();
  const channel = cancelChannel(opts.prefix);
  const sub = createRedis(opts.redisTarget, 'blocking');
  if (opts.outage) opts.outage.watch(sub);
  else sub.on('error', (err) => opts.log.warn({ err: { message: err.message } }, 'cancel subscriber connection error'));
  let loaded = false;
  let closed = false;

  const apply = (request: CancelRequest) => {
    pending.set(keyOf(request.queue, request.jobId), request);
    if (opts.cancelRunning(request.queue, request.jobId, JobCancelledError.of(request).message)) {
      opts.log.info({ queue: request.queue, jobId: request.jobId, by: request.by }, 'cancel request: aborting the running job');
    }
  };

  sub.on('message', (ch: string, raw: string) => {
    if (ch !== channel) return;
    const msg = parseCancelMessage(raw);
    if (!msg) return;
    if (msg.type === 'done') pending.delete(keyOf(msg.queue, msg.jobId));
    else apply(msg.request);
  });

  const load = async () => {
    for (const r of await loadCancelRequests(opts.redis, opts.prefix)) apply(r);
  };
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const reload = () =>
    load().catch((err: Error) => opts.outage?.down || opts.log.warn({ err: { message: err.message } }, 'could not read pending cancel requests; read again on the next reconnect'));
  // The first read follows the subscription, so no request falls between the two. ioredis re-subscribes by
  // itself after a reconnect and emits `ready`: the read then picks up what was sent while it was down.
  sub
    .subscribe(channel)
    .then(reload, (err: Error) => opts.log.warn({ err: { message: err.message } }, 'could not subscribe to cancel requests'))
    .finally(() => {
      loaded = true;
      markReady();
      sub.on('ready', () => void (closed || reload()));
    });

  return {
    ready,
    get loaded() {
      return loaded;
    },
    pending(queue, jobId) {
      if (pending.size === 0) return undefined; // the usual case: no key to build
      const r = pending.get(keyOf(queue, jobId));
      if (r && r.expiresAt <= Date.now()) {
        pending.delete(keyOf(queue, jobId));
        return undefined;
      }
      return r;
    },
    async finished(queue, jobId) {
      pending.delete(keyOf(queue, jobId));
      await finishCancelRequest(opts.redis, opts.prefix, queue, jobId).catch((err: Error) =>
        opts.log.warn({ err: { message: err.message }, queue, jobId }, 'could not clear the cancel request; it expires by itself'),
      );
    },
    close() {
      closed = true;
      markReady();
      sub.disconnect();
    },
  };
}
