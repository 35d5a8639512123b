/**
 * `node packages/jobs/dist/examples/schedule-demo-users.js`: gives each demo user (DEMO_DIGEST_USERS, six
 * timezones) her own 09:00 digest schedule, as a sign-up handler would, and prints what each upsert did.
 * Running it again changes nothing. REDIS_URL and QUEUE_PREFIX as for every app.
 */
import { createLogger, createRedis, createSchedules, QueueSet } from 'tickwork';
import { DEMO_DIGEST_USERS } from '../demo-data.js';
import { catalog } from '../index.js';
import { scheduleUserDigest, userDigestScheduleId } from './user-schedules.js';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'command');
const queues = new QueueSet(redis, process.env.QUEUE_PREFIX ?? 'tickwork', createLogger('example', 'warn'));
try {
  const schedules = createSchedules({ redis, queues, catalog });
  for (const user of DEMO_DIGEST_USERS) {
    const r = await scheduleUserDigest(schedules, user);
    const verdict = r.created ? 'created' : r.changed ? 'changed' : 'unchanged';
    process.stdout.write(`${verdict} ${userDigestScheduleId(user.id)} (${user.tz}), next ${r.next?.toISOString() ?? 'none'}\n`);
  }
} finally {
  await queues.close();
  redis.disconnect();
}
