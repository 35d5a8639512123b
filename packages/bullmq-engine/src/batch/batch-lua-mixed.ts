/**
 * A batch job's queue run by fast and public stores at once: during a rolling upgrade of BullMQ some worker
 * processes match the engine's contract (the fast store, fast-batch-store.ts) and others do not, or run with
 * WORKER_BULLMQ_FAST_PATH=off (the public store, public-batch-store.ts). Effects stay once whichever mix runs
 * the queue; this file holds the fast store's side of it.
 *
 * Public → fast: the public store commits a batch's `ctx.tx` writes with a done record per job (`batch-done`,
 * job id → its creation timestamp), then acknowledges each job. A public worker that dies in between leaves
 * committed jobs that BullMQ delivers again. The fast fetch honours the records: one EXISTS `batch-done` per
 * fetch, and only when it exists the fetched ids' records are read; a job whose record holds its timestamp is
 * completed there (COMPLETE_DONE), not handed to a handler and nothing committed, and more jobs are taken in
 * its place (at most MAX_DONE such per fetch).
 *
 * Fast → public needs nothing: a fast batch's writes and its jobs' completion are one script
 * (COMPLETE_BATCH), so no job is ever committed by a fast store and left uncompleted: a fast batch whose
 * worker died committed nothing, and whoever takes its jobs back (a fast reclaim after its lease, or BullMQ's
 * stalled check in a public store's Worker once the hold below lapses) runs them once. A fast worker frozen
 * while BullMQ's check moved its jobs has its settle refused (the hold outlasts the fence: batch-lua-shared.ts),
 * and the fast reclaim leaves alone a job a public store took meanwhile (its BullMQ lock).
 *
 * The public store's dead jobs, and the hold. A public store's jobs come back through BullMQ's stalled check
 * (its BullMQ Worker's) once their locks expire. But each fast fetch and renewal holds the check's gate for
 * HOLD_LEASES (4) leases: while fast batches keep being fetched the check never runs, and once they stop it
 * runs only 4 fast leases after the last fetch or renewal, moving a job on its second run (up to 2 stalled
 * intervals later). Where no public store is left (the end of a rolling upgrade) no stalled check runs at all.
 * So the fast stores take such jobs back themselves (ADOPT_ORPHANS, in the reclaim script): a job in active
 * that no fast batch in flight holds and whose BullMQ lock is gone goes back as BullMQ's check would send it (a
 * stall counted, a `stalled` event, to the head of wait; failed for good past the max), except that a job
 * with its done record goes back uncounted, for the next fetch to complete it. A public store's dead jobs are
 * thus back in wait at most its lock (2 of its leases) after its last lock extension, plus one scan interval
 * (a fast lease) and one reclaim tick (a quarter of one): 2 public + 1.25 fast leases, 26 s at the default
 * 8 s, however busy the fast stores are.
 *
 * Nothing is lost: the scan runs while `batch-public` or `batch-done` exists. A public store sets
 * `batch-public` (a Redis time in ms, raised only) to now + its lock + a minute's slack before anything that
 * has BullMQ lock a job for it (its fetch, its renewal, its blocking wait: public-batch-lua.ts). A scan drops
 * it only once its time passed (by the fast worker's clock: the slack covers the clocks' difference) and no
 * job in active outside the fast batches holds a lock: so every job a public store locked is either seen
 * locked by a scan that keeps the mark, or taken back by one. The one gap: a public store frozen for more
 * than the slack between setting the mark and BullMQ locking a job, then killed; its jobs wait for BullMQ's
 * stalled check (any public store's). The scan also drops done records no delivery will use (the job
 * completed, gone, or another job under its id), as the public store's sweep does.
 *
 * Cost where no public store ever ran (the usual case): one EXISTS in the fetch script per batch and one
 * EXISTS (of two keys) in the reclaim script per reclaim tick; no call to Redis added. While public stores
 * run or ran: one scan per fast lease across all fast workers (LRANGE active, HGETALL batch-ids, an EXISTS per
 * job in active outside the fast batches, HRANDFIELD of up to 100 records and two reads each), and one HGET
 * per fetched job while records exist.
 */

/** Jobs with a done record one fetch completes at most (then it returns, asking to be called again at once). */
export const MAX_DONE = 1000;

/** Done records looked at per scan. */
const SWEEP_RECORDS = 100;

/**
 * Completes jobs a public store committed (taken off wait by the fetch; `done.ids`, `done.attempts`: attempts
 * made with the committed one) as the fast store completes a batch's (COMPLETE_JOBS), with BullMQ's
 * `completed` event each, as the public store's acknowledgement would have sent; their records are dropped.
 */
export const COMPLETE_DONE = `
local function completeDone(prefix, recordsKey, completedKey, eventsKey, done, now, keepCount, keepAge, maxEvents)
  local ids = done.ids
  for k = 1, #ids, 500 do redis.call('HDEL', recordsKey, unpack(ids, k, math.min(k + 499, #ids))) end
  completeJobs(prefix, completedKey, ids, done.attempts, now, keepCount, keepAge, false)
  for _, id in ipairs(ids) do
    redis.call('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'completed', 'jobId', id, 'returnvalue', 'null', 'prev', 'active')
  end
end
`;

/**
 * Takes back the jobs in active that no fast batch in flight holds and whose BullMQ lock is gone (a dead
 * BullMQ Worker's: a public store's), drops `batch-public` when no public store can hold a job, and sweeps
 * done records. `k`: batchIds, active, wait, failed, events, mark, records, completed. Appends the ids failed
 * for good to `failed`; returns how many went back to wait. Needs FAIL_FOR_GOOD and REMOVE_FROM_ACTIVE.
 */
export const ADOPT_ORPHANS = `
local function adoptOrphans(k, prefix, now, maxStalled, maxEvents, failed)
  local rcall = redis.call
  local live = {}
  local all = rcall('HGETALL', k.batchIds)
  for i = 2, #all, 2 do
    for _, id in ipairs(cjson.decode(all[i])) do live[id] = true end
  end
  local active = rcall('LRANGE', k.active, 0, -1)
  local orphans, locked = {}, false
  -- Oldest first (the list's tail), as removeFromActive cuts a tail.
  for i = #active, 1, -1 do
    local id = active[i]
    if not live[id] then
      if rcall('EXISTS', prefix .. id .. ':lock') == 1 then locked = true else orphans[#orphans + 1] = id end
    end
  end
  local back = 0
  if #orphans > 0 then removeFromActive(k.active, orphans) end
  -- Newest pushed first, so the oldest ends at the head of wait.
  for i = #orphans, 1, -1 do
    local id = orphans[i]
    local jk = prefix .. id
    local ts = rcall('HGET', jk, 'timestamp')
    if ts and rcall('HGET', k.records, id) == ts then
      -- Committed: not a stall; the next fetch completes it without running.
      rcall('RPUSH', k.wait, id)
      back = back + 1
    elseif ts and rcall('HINCRBY', jk, 'stc', 1) > maxStalled then
      failForGood(k.failed, k.events, maxEvents, jk, id, 'job stalled more than allowable limit', now)
      failed[#failed + 1] = id
    elseif ts then
      rcall('RPUSH', k.wait, id)
      rcall('XADD', k.events, 'MAXLEN', '~', maxEvents, '*', 'event', 'stalled', 'jobId', id)
      back = back + 1
    end
  end
  if not locked and (tonumber(rcall('GET', k.mark)) or 0) < now then rcall('DEL', k.mark) end
  local records = rcall('HRANDFIELD', k.records, ${SWEEP_RECORDS}, 'WITHVALUES')
  for i = 1, #records, 2 do
    local id = records[i]
    if rcall('HGET', prefix .. id, 'timestamp') ~= records[i + 1] or rcall('ZSCORE', k.completed, id) then rcall('HDEL', k.records, id) end
  end
  return back
end
`;
