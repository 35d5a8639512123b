import { UnrecoverableError as BullUnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { metricsRegistry, UnrecoverableError } from './index.js';

describe('process metrics', () => {
  it('carry the tickwork_ prefix once, not a doubled process_', async () => {
    const text = await metricsRegistry.metrics();
    expect(text).toMatch(/^tickwork_process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^tickwork_nodejs_heap_size_used_bytes /m);
    expect(text).not.toContain('process_process');
  });
});

describe('UnrecoverableError', () => {
  it("is BullMQ's own class, importable from @tickwork/runtime", () => {
    expect(new UnrecoverableError('no')).toBeInstanceOf(BullUnrecoverableError);
  });
});
