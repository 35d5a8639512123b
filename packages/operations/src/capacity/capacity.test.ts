import { describe, expect, it } from 'vitest';
import { classifyKey, jobComponent } from './classify.js';
import { formatAge, formatBytes } from './format.js';
import { memoryConfigProblems, parseMemoryInfo } from '@tickwork/core';

const P = 'tw';
const component = (key: string) => {
  const cls = classifyKey(key, P);
  return 'component' in cls ? cls.component : `job ${cls.jobHash}`;
};

describe('classifyKey', () => {
  it('sorts tickwork keys into components by name', () => {
    expect(component('tw:ledger:billing.charge-monthly@2026-01-01T00:00:00.000Z')).toBe('ledger');
    expect(component('tw:ledger:email.send#42:steps')).toBe('ledger');
    expect(component('tw:ledger-fp:86400000:243091:0:17')).toBe('ledger');
    expect(component('tw:{email}:ledger-fp:stages')).toBe('ledger');
    expect(component('tw:schedule:billing.charge-monthly:history')).toBe('schedule-history');
    expect(component('tw:schedule:billing.charge-monthly:records')).toBe('schedule-history');
    expect(component('tw:{sched:3}:h:tenant:7:weekly:history')).toBe('schedule-history');
    expect(component('tw:{sched:3}:h:tenant:7:weekly:records')).toBe('schedule-history');
    expect(component('tw:{sched:3}:h:tenant:7:weekly:last-success')).toBe('schedules');
    expect(component('tw:{sched:12}:due')).toBe('schedules');
    expect(component('tw:{sched:12}:defs')).toBe('schedules');
    expect(component('tw:schedule:billing.charge-monthly:cursor')).toBe('schedules');
    expect(component('tw:schedule:billing.charge-monthly:last-success')).toBe('schedules');
    expect(component('tw:meta:schedules')).toBe('schedules');
    expect(component('tw:meta:schedule-health')).toBe('schedules');
    expect(component('tw:overlap:{reports.daily}:skips')).toBe('overlap');
    expect(component('tw:meta:queues')).toBe('tickwork-other');
    expect(component('tw:lock:{x}:fence')).toBe('tickwork-other');
  });

  it('sorts BullMQ keys by structure, DLQ keys into dlq, and job keys by their job hash', () => {
    expect(component('tw:email:wait')).toBe('jobs-pending');
    expect(component('tw:email:delayed')).toBe('jobs-pending');
    expect(component('tw:email:active')).toBe('jobs-pending');
    expect(component('tw:email:completed')).toBe('jobs-finished');
    expect(component('tw:email:failed')).toBe('jobs-finished');
    expect(component('tw:email:events')).toBe('queue-events');
    expect(component('tw:email:meta')).toBe('tickwork-other');
    expect(component('tw:email:de:abc')).toBe('tickwork-other');
    expect(component('tw:sums:batches')).toBe('jobs-pending');
    expect(component('tw:sums:batch-leases')).toBe('jobs-pending');
    expect(component('tw:sums:batch-done')).toBe('ledger');
    expect(component('tw:sums:batch-format')).toBe('tickwork-other');
    expect(component('tw:stalls:email:42')).toBe('ledger');
    expect(component('tw:{email}:stalls:email:42')).toBe('ledger');
    expect(component('tw:email.dlq:wait')).toBe('dlq');
    expect(component('tw:email.dlq:mail-1@1767225600000')).toBe('dlq');
    expect(component('tw:email.dlq:events')).toBe('dlq');
    expect(component('tw:email:42')).toBe('job tw:email:42');
    expect(component('tw:email:42:lock')).toBe('job tw:email:42');
    expect(component('tw:email:billing.charge-monthly@2026-01-01T000000.000Z:logs')).toBe('job tw:email:billing.charge-monthly@2026-01-01T000000.000Z');
    // A BullMQ job scheduler: its set and definition hash are no job; the jobs it adds are.
    expect(component('tw:email:repeat')).toBe('tickwork-other');
    expect(component('tw:email:repeat:nightly')).toBe('tickwork-other');
    expect(component('tw:email:repeat:nightly:1767225600000')).toBe('job tw:email:repeat:nightly:1767225600000');
    expect(component('tw:email:repeat:nightly:1767225600000:lock')).toBe('job tw:email:repeat:nightly:1767225600000');
    expect(jobComponent(true)).toBe('jobs-finished');
    expect(jobComponent(false)).toBe('jobs-pending');
  });

  it('keys outside the prefix are not tickwork, even when they start alike', () => {
    expect(component('key:1')).toBe('not-tickwork');
    expect(component('twx:ledger:a')).toBe('not-tickwork');
    expect(classifyKey('{tickwork}:ledger:a', '{tickwork}')).toEqual({ component: 'ledger' });
  });
});

describe('Redis memory settings', () => {
  const info = (max: number, policy: string, used = 1000) =>
    `# Memory\r\nused_memory:${used}\r\nused_memory_human:1K\r\nused_memory_dataset:600\r\nmaxmemory:${max}\r\nmaxmemory_policy:${policy}\r\n`;

  it('parses INFO memory', () => {
    expect(parseMemoryInfo(info(4000, 'noeviction'))).toEqual({ usedBytes: 1000, datasetBytes: 600, maxBytes: 4000, policy: 'noeviction', ratio: 0.25 });
    expect(parseMemoryInfo(info(0, 'noeviction')).ratio).toBeNull();
  });

  it('names what to set when maxmemory is unset or the policy evicts', () => {
    expect(memoryConfigProblems(parseMemoryInfo(info(4000, 'noeviction')))).toEqual([]);
    const both = memoryConfigProblems(parseMemoryInfo(info(0, 'allkeys-lru')));
    expect(both).toHaveLength(2);
    expect(both[0]).toContain('set `maxmemory <bytes>`');
    expect(both[1]).toContain('maxmemory-policy is "allkeys-lru": set `maxmemory-policy noeviction`');
  });
});

describe('formatting', () => {
  it('bytes and ages read like a person would write them', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
    expect(formatAge(42)).toBe('42 s');
    expect(formatAge(3 * 86_400 + 4 * 3600 + 5)).toBe('3 d 4 h');
    expect(formatAge(12 * 60 + 30)).toBe('12 min');
  });
});

describe("the charts' history in the capacity estimate", () => {
  it('counts every timeline key as timeline, on one Redis and on a cluster', () => {
    expect(component('tw:timeline:email')).toBe('timeline');
    expect(component('tw:{email}:timeline:email')).toBe('timeline');
    expect(component('tw:{sched:3}:h:reports.daily:timeline')).toBe('timeline');
    expect(component('tw:meta:timeline:redis-memory')).toBe('timeline');
    expect(component('tw:{sched:3}:h:reports.daily:history')).toBe('schedule-history');
    expect(component('tw:meta:processes')).toBe('tickwork-other');
  });
});
