import { Job, RedisQueueBackend, Worker, createIORedisClient, raw2NextJobData } from 'bullmq';
import { scriptEntry, sourceEntry, versionEntry, type ContractEntry } from './check.js';
import { MIRRORED_SCRIPTS } from './scripts.js';

/**
 * What the fast paths rely on beyond BullMQ's and ioredis's public API, each checked at worker start
 * (engine.ts): any entry that does not hold puts the worker on BullMQ's public paths. Recorded against
 * bullmq 6.7.0 and ioredis 6.0.0 (the versions pinned in pnpm-workspace.yaml). When an upgrade breaks an
 * entry: read what changed, bring the code that relies on it in line (docs/upgrading-bullmq.md names it),
 * run the engine's tests, then record the new digest here.
 */

const W = Worker.prototype as unknown as Record<string, unknown>;
const B = RedisQueueBackend.prototype as unknown as Record<string, unknown>;
const J = Job.prototype as unknown as Record<string, unknown>;

/**
 * BullMQ functions the short completion path (worker/tickwork-worker.ts) does the work of, step by step, or
 * calls though TypeScript calls them private or protected: a new text means the copy may now differ.
 */
const SOURCES: readonly [name: string, digest: string, why: string, fn: () => unknown][] = [
  ['Worker.prototype.processJob', '28dc4360f573', 'TickworkWorker.processJob is this, step by step, without its telemetry wrapper', () => W.processJob],
  ['Worker.prototype.handleCompleted', '7c39649e296b', 'TickworkWorker.handleCompleted does its work without its wrappers', () => W.handleCompleted],
  ['Job.prototype.moveToCompleted', '1f5529e001b8', 'part of the way handleCompleted takes, done inline by the short path', () => J.moveToCompleted],
  ['RedisQueueBackend.prototype.moveToCompleted', 'b994b3f3b369', 'part of the way handleCompleted takes, done inline by the short path', () => B.moveToCompleted],
  ['RedisQueueBackend.prototype.moveToFinished', 'a55b4e1f6df4', 'part of the way handleCompleted takes, done inline by the short path', () => B.moveToFinished],
  ['RedisQueueBackend.prototype.moveToCompletedArgs', '61e83744ca2f', "completionArgs (worker/completion-args.ts) makes the same arguments with the options unpacked", () => B.moveToCompletedArgs],
  ['RedisQueueBackend.prototype.moveToFinishedArgs', '89cda8bcfbdc', 'what moveToCompletedArgs calls: the KEYS and ARGV layout the fold reads (ack/ack-constants.ts)', () => B.moveToFinishedArgs],
  ['RedisQueueBackend.prototype.getKeepJobs', 'df2775680f94', 'completionArgs calls it (protected) for the keepJobs option', () => B.getKeepJobs],
  ['RedisQueueBackend.prototype.execCommand', 'f4493b25fc52', "TickworkWorker wraps it to note deliveries and sends the acknowledgement through it", () => B.execCommand],
  ['RedisQueueBackend.prototype.finishedErrors', '98e061600f62', 'the short path throws a refused acknowledgement as this makes it', () => B.finishedErrors],
  ['Worker.prototype.nextJobFromJobData', 'f60ec63b5e36', 'TickworkWorker.nextJob makes the next job as this does', () => W.nextJobFromJobData],
  ['Worker.prototype.createJob', 'e395fcafc16b', 'TickworkWorker.createJob marks a delivered job after it', () => W.createJob],
  ['Worker.prototype.retryIfFailed', '056680506d73', 'private: the short path hands a failed acknowledgement to it', () => W.retryIfFailed],
  ['Worker.prototype.getUnrecoverableErrorMessage', '792d83c3252e', 'private: processJob calls it', () => W.getUnrecoverableErrorMessage],
  ['Worker.prototype.updateDelays', '797feff1e489', 'private: the short path calls it with a fetched job\'s delays', () => W.updateDelays],
  ['Worker.prototype.callProcessJob', 'a6967fab0c07', 'protected: processJob calls it', () => W.callProcessJob],
  ['raw2NextJobData', '65c2f8dc9abd', 'the short path decodes a fetched job with it', () => raw2NextJobData],
  ['createIORedisClient', '0bdf5af331f7', "the fold (ack/ack-fold.ts) replaces the runCommand this proxy gives BullMQ's connection", () => createIORedisClient],
];

export const CONTRACT: readonly ContractEntry[] = [
  versionEntry('bullmq', '6.7.0', 'the version every entry below was recorded against: another runs on the public paths until the contract is recorded again'),
  versionEntry('ioredis', '6.0.0', "the cork (cork.ts) holds its socket's writes and the fold reads its commandQueue, neither of them public"),
  ...SOURCES.map(([name, digest, why, fn]) => sourceEntry(name, digest, why, fn)),
  {
    name: "Worker's Job getter",
    why: 'TickworkWorker makes its jobs DeliveredJobs by overriding it (BullMQ makes jobs with this.Job.fromJSON)',
    check() {
      for (let p: object | null = Worker.prototype; p; p = Object.getPrototypeOf(p) as object | null) {
        const d = Object.getOwnPropertyDescriptor(p, 'Job');
        if (d) return typeof d.get === 'function' ? undefined : 'it is no longer a getter';
      }
      return 'it is gone';
    },
  },
  ...MIRRORED_SCRIPTS.map((s) => scriptEntry(s.file, s.digest, s.why)),
];
