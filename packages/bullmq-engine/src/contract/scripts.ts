/**
 * Every BullMQ Lua file tickwork's fast paths include, mirror or wrap, with the digest of its text as the
 * installed BullMQ (6.7.0) ships it: the first 12 hex digits of the SHA-1 of the file, relative to BullMQ's
 * `dist/cjs/commands` folder (lua/bullmq-includes.ts, bullmqFileText). The worker's start checks them
 * (contract/contract.ts) and ack/ack-fold-lua.test.ts fails, naming the file, when one differs. A new
 * digest means: read the new text, bring the code `why` names in line with it, then record the digest here.
 */
export const MIRRORED_SCRIPTS: readonly { file: string; digest: string; why: string }[] = [
  { file: 'moveToFinished-14.lua', digest: '1397c0972911', why: 'the fold (ack/ack-fold-lua.ts) wraps it whole, and the lean path (ack/ack-lean-lua.ts) does its body for a completed job, removed or kept' },
  { file: 'includes/fetchNextJob.lua', digest: '5b8b69fa20f3', why: "the lean path's leanFetch does its body (its include functions called as it calls them), promoting once per call" },
  { file: 'includes/getQueueMetadata.lua', digest: '101c49ce2b52', why: "the lean path's leanUsable reads the same meta fields (once per call) and refuses a queue with any of them" },
  { file: 'includes/getRateLimitTTL.lua', digest: 'adb74e7ed94c', why: 'the lean path skips it: without a limiter (maxJobs nil) it returns 0 and calls nothing' },
  { file: 'includes/removeLock.lua', digest: 'a87722a8f00f', why: 'included by the lean path: the lock checked and removed, the job out of the stalled set' },
  { file: 'includes/updateJobFields.lua', digest: '71b739c7b96c', why: 'included by the lean path: the fields written before the refusal of a job locked but not active (-3)' },
  { file: 'includes/removeJobKeys.lua', digest: '1450d4c93347', why: 'included by the lean path: the keys of a job removed on completion' },
  { file: 'includes/promoteDelayedJobs.lua', digest: 'cf26de2d5856', why: 'included by the lean path (once per call); batch/batch-lua.ts mirrors the promotion before it takes jobs' },
  { file: 'includes/addBaseMarkerIfNeeded.lua', digest: '9e879490a1a9', why: 'included by the lean path through promoteDelayedJobs and prepareJobForProcessing: the wake-up marker' },
  { file: 'includes/addJobInTargetList.lua', digest: 'd0d9821d5579', why: 'included by the lean path through promoteDelayedJobs, and by the lift (delayed/lift-ahead.ts)' },
  { file: 'includes/addJobWithPriority.lua', digest: '6021baac9905', why: 'included by the lean path through promoteDelayedJobs, and by the lift; batch/batch-lua.ts mirrors how a promoted job with a priority is added' },
  { file: 'includes/getPriorityScore.lua', digest: '360dc4fdb35a', why: "included by the lean path through promoteDelayedJobs; batch/batch-lua.ts mirrors the prioritized set's score" },
  { file: 'includes/moveJobFromPrioritizedToActive.lua', digest: 'f65f50b97d33', why: 'included by the lean path: the next job from the prioritized set' },
  { file: 'includes/prepareJobForProcessing.lua', digest: '36b4485c98c5', why: 'included by the lean path: the next job locked, stamped, announced (active) and returned' },
  { file: 'includes/getNextDelayedTimestamp.lua', digest: 'd7102f1dc277', why: "included by the lean path: the next delayed job's time when none is waiting; batch/batch-lua.ts mirrors it" },
  { file: 'includes/trimEvents.lua', digest: '07f299e9d10b', why: 'included by the lean path: the event stream trimmed once per call (leanAfter)' },
  { file: 'includes/getOrSetMaxEvents.lua', digest: '8f3067befe88', why: 'included by the lean path through trimEvents' },
  { file: 'includes/removeJobsByMaxAge.lua', digest: 'eb5e8c4925a1', why: "included by the lean path: a kept job's completed set trimmed by age (once per call, leanAfter)" },
  { file: 'includes/removeJobsByMaxCount.lua', digest: '80f2cf23dc90', why: "included by the lean path: a kept job's completed set trimmed by count (once per call, leanAfter)" },
  { file: 'includes/removeJob.lua', digest: '34fad2266815', why: 'included by the lean path through removeJobsByMaxAge and removeJobsByMaxCount: a trimmed job removed' },
  { file: 'includes/batches.lua', digest: 'dbf3401211e6', why: 'included by the lean path through removeJobsByMaxAge' },
  { file: 'includes/removeDeduplicationKeyIfNeededOnRemoval.lua', digest: '877239e3a07b', why: 'included by the lean path through removeJob' },
  { file: 'includes/removeParentDependencyKey.lua', digest: 'bb0836791b38', why: 'included by the lean path through removeJob' },
  { file: 'includes/destructureJobKey.lua', digest: '3e99bf498c66', why: 'included by the lean path through removeParentDependencyKey, and by the lift (delayed/lift-ahead.ts)' },
  { file: 'includes/isQueuePausedOrMaxed.lua', digest: '201fc8715fa0', why: 'included by the lean path through removeParentDependencyKey, and by the lift (delayed/lift-ahead.ts)' },
  { file: 'promote-9.lua', digest: '8583d25b27ec', why: "the scheduler's lift (delayed/lift-ahead.ts) does its body for many ids a call, pushing to the head of the wait list where it pushes to the back" },
  { file: 'moveStalledJobsToWait-9.lua', digest: '8b5a9d001bd6', why: 'stalls.ts counts stalls as it does: the same stc and defa fields of the job hash, rjk jobs never failed, only while the lock is held' },
  { file: 'extendLock-2.lua', digest: 'bf787b8dd0a1', why: "the lock format tickwork reads and writes: <job key>:lock holding the token, set with PX (the fold's relock, stalls.ts)" },
  { file: 'extendLocks-1.lua', digest: '0f3a44a7aac0', why: "the lock format tickwork reads and writes: <job key>:lock holding the token, set with PX (stalls.ts's activeLockedBy, the fold's relock)" },
];
