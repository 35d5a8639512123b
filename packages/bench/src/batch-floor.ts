/**
 * `pnpm bench:batch-floor`: what Redis and Node would pay per job if jobs were fetched and completed in
 * batches by scripts of tickwork's own (the floor under batch jobs, apps/worker/src/batch). Two Lua scripts
 * on a private redis-server stand for such an engine's floor, doing per job what BullMQ's fetch and
 * acknowledgement do for a no-op job removed on completion: fetch N moves up to N ids from the wait list to
 * the active list, sets each one's lock, stamps its hash, adds an `active` event to the events stream and
 * returns the hash; complete N deletes each lock, removes the id from the active list, adds a `completed`
 * event and deletes the hash. Four loops (fetch N, then complete them) keep Redis busy as a worker's slots
 * would. No handler, no Job objects: the figures are a floor, to set beside BullMQ's ~37 µs of Redis CPU per
 * no-op job that `pnpm bench` prints. BENCH_JOBS (default 100000); batch sizes 1, 10, 50.
 *
 * Then the same with bookkeeping per batch rather than per job (batch sizes 10, 50, 200): fetch N pops up to
 * N ids at once, pushes them to the active list in one command, sets one lock for the batch, adds one
 * `active` event for it and returns each job's hash; complete N removes each id from the active list, deletes
 * the batch's lock, adds one `completed` event and deletes the hashes in one command. What a batch job whose
 * lock and events are the batch's, not each job's, would cost at least.
 */
import { startRedisServer } from '@tickwork/testkit';
import { Redis } from 'ioredis';
import { redisCpu } from './redis-cpu.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 100_000);
const KEYS = ['q:wait', 'q:active', 'q:events', 'q:'] as const;

const FETCH_LUA = `
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local id = redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
  if not id then break end
  local jk = KEYS[4] .. id
  redis.call('SET', jk .. ':lock', ARGV[2], 'PX', 30000)
  redis.call('HSET', jk, 'processedOn', ARGV[3], 'ats', 1)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'event', 'active', 'jobId', id, 'prev', 'waiting')
  out[#out + 1] = {id, redis.call('HGETALL', jk)}
end
return out`;

const COMPLETE_LUA = `
for i = 1, #ARGV do
  local id = ARGV[i]
  local jk = KEYS[4] .. id
  redis.call('DEL', jk .. ':lock')
  redis.call('LREM', KEYS[2], -1, id)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'event', 'completed', 'jobId', id, 'returnvalue', 'null', 'prev', 'active')
  redis.call('DEL', jk, jk .. ':logs')
end
return #ARGV`;

/** Per batch: KEYS as above, ARGV[1] the batch size, ARGV[2] the batch's token. */
const FETCH_BATCH_LUA = `
local ids = redis.call('RPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
redis.call('LPUSH', KEYS[2], unpack(ids))
redis.call('SET', KEYS[4] .. 'batch:' .. ARGV[2], ARGV[2], 'PX', 30000)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'event', 'active', 'batch', ARGV[2], 'count', #ids)
local out = {}
for i, id in ipairs(ids) do out[i] = {id, redis.call('HGETALL', KEYS[4] .. id)} end
return out`;

/** Per batch: ARGV[1] the batch's token, then its job ids. */
const COMPLETE_BATCH_LUA = `
local keys = {}
for i = 2, #ARGV do
  redis.call('LREM', KEYS[2], -1, ARGV[i])
  keys[#keys + 1] = KEYS[4] .. ARGV[i]
end
redis.call('DEL', KEYS[4] .. 'batch:' .. ARGV[1])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'event', 'completed', 'batch', ARGV[1], 'count', #ARGV - 1)
redis.call('DEL', unpack(keys))
return #ARGV - 1`;

type Batched = Redis & {
  fetchN(...args: (string | number)[]): Promise<[string, string[]][]>;
  completeN(...args: string[]): Promise<number>;
  fetchBatch(...args: (string | number)[]): Promise<[string, string[]][]>;
  completeBatch(...args: string[]): Promise<number>;
};

/** One way of fetching and completing a batch: fetch returns the jobs it took, complete completes their ids. */
interface Bookkeeping {
  fetch(batch: number, token: string): Promise<[string, string[]][]>;
  complete(token: string, ids: string[]): Promise<number>;
}

const perJob = (r: Batched): Bookkeeping => ({
  fetch: (batch) => r.fetchN(...KEYS, batch, 'token', Date.now()),
  complete: (_token, ids) => r.completeN(...KEYS, ...ids),
});
const perBatch = (r: Batched): Bookkeeping => ({
  fetch: (batch, token) => r.fetchBatch(...KEYS, batch, token),
  complete: (token, ids) => r.completeBatch(...KEYS, token, ...ids),
});

async function drain(r: Batched, batch: number, books: Bookkeeping): Promise<{ rate: number; redisUs: number; nodeUs: number }> {
  for (let i = 0; i < JOBS; i += 1000) {
    const p = r.pipeline();
    for (let k = i; k < Math.min(i + 1000, JOBS); k++) {
      p.hset(`q:${k}`, 'name', 'bench.noop', 'data', JSON.stringify({ i: k }), 'opts', '{"attempts":1}', 'timestamp', Date.now());
      p.lpush('q:wait', String(k));
    }
    await p.exec();
  }
  const redis0 = await redisCpu(r);
  const node0 = process.cpuUsage();
  const started = performance.now();
  let done = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async (loop) => {
      for (let n = 0; ; n++) {
        const token = `${loop}-${n}`;
        const got = await books.fetch(batch, token);
        if (got.length === 0) return;
        await books.complete(token, got.map(([id]) => id));
        done += got.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const node = process.cpuUsage(node0);
  const redisSeconds = (await redisCpu(r)) - redis0;
  if (done !== JOBS) throw new Error(`drained ${done} of ${JOBS} jobs`);
  await r.del('q:events');
  return { rate: done / seconds, redisUs: (redisSeconds * 1e6) / done, nodeUs: (node.user + node.system) / done };
}


async function main(): Promise<void> {
  const server = await startRedisServer();
  const r = new Redis(server.url) as Batched;
  r.defineCommand('fetchN', { numberOfKeys: KEYS.length, lua: FETCH_LUA });
  r.defineCommand('completeN', { numberOfKeys: KEYS.length, lua: COMPLETE_LUA });
  r.defineCommand('fetchBatch', { numberOfKeys: KEYS.length, lua: FETCH_BATCH_LUA });
  r.defineCommand('completeBatch', { numberOfKeys: KEYS.length, lua: COMPLETE_BATCH_LUA });
  const line = (batch: number, m: { rate: number; redisUs: number; nodeUs: number }) =>
    `  batch ${String(batch).padStart(3)}: ${m.rate.toFixed(0).padStart(6)} jobs/s   cpu per job: redis ${m.redisUs.toFixed(1)} us, node ${m.nodeUs.toFixed(1)} us\n`;
  process.stdout.write(`batched fetch and completion, a floor (no handler, no Job objects): ${JOBS} no-op jobs per batch size, 4 loops\n`);
  process.stdout.write('bookkeeping per job (a lock, a stamp and two events each):\n');
  for (const batch of [1, 10, 50]) process.stdout.write(line(batch, await drain(r, batch, perJob(r))));
  process.stdout.write('bookkeeping per batch (one lock and two events a batch):\n');
  for (const batch of [10, 50, 200]) process.stdout.write(line(batch, await drain(r, batch, perBatch(r))));
  r.disconnect();
  await server.stop();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`batch floor failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
