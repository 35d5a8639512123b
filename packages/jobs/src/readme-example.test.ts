/**
 * The README's "Add a job" example, as a user copies it: the keys its `ctx.redisStep` writes carry its
 * queue's hash tag, so the job runs on a Redis Cluster too, where a redisStep refuses a key without it
 * (RedisStepSlotError; docs/redis-cluster.md).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const start = readme.indexOf('\n## Add a job\n');
const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? '';

describe("the README's Add a job example", () => {
  it('writes only keys tagged with its queue in its redisStep, as Redis Cluster requires', () => {
    const queue = /\bqueue: '([^']+)'/.exec(example)?.[1];
    expect(queue, 'the example names its queue').toBeDefined();
    // tx.<command>('<key>', ...): the first argument of each command a redisStep queues is its key.
    const keys = [...example.matchAll(/\btx\.\w+\(\s*['"`]([^'"`]+)['"`]/g)].map((m) => m[1]);
    expect(keys.length, 'the example writes through a redisStep').toBeGreaterThan(0);
    for (const key of keys) expect(key).toContain(`{${queue}}`);
  });
});
