/**
 * Test-only process (batch-foreign.test.ts): a stock BullMQ Worker attached to a batch job's queue that runs
 * BullMQ's own stalled check, as any BullMQ Worker does, every STALLED_INTERVAL_MS, and takes no job itself
 * (BullMQ's manual-processing pattern: no processor, `startStalledCheckTimer()`). Prints one JSON line per
 * job its stalled check moves back to wait (`stalled`), and `ready` once its connections are up.
 * Env: REDIS_URL, QUEUE, QUEUE_PREFIX, STALLED_INTERVAL_MS.
 */
import { createRedis } from '@tickwork/core';
import { Worker } from 'bullmq';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`stock-worker.fixture: ${name} is required`);
  return value;
};

const connection = createRedis(env('REDIS_URL'), 'blocking');
const worker = new Worker(env('QUEUE'), null, {
  connection,
  prefix: env('QUEUE_PREFIX'),
  autorun: false,
  stalledInterval: Number(env('STALLED_INTERVAL_MS')),
  maxStalledCount: 10,
});
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
worker.on('stalled', (jobId) => print({ msg: 'stalled', jobId }));
worker.on('error', (err) => print({ msg: 'error', err: err.message }));
await worker.waitUntilReady();
await worker.startStalledCheckTimer();
print({ msg: 'ready', workerId: worker.id });
process.once('SIGTERM', () => void worker.close().finally(() => process.exit(0)));
