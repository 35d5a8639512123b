/** The reasons an unreadable job is dead-lettered with: what BullMQ's decoding of the stored hash throws, per field. */
import { describe, expect, it } from 'vitest';
import { isJobDecodeError, unreadableReason } from './unreadable.js';

describe('unreadableReason', () => {
  it('is undefined for a hash BullMQ can decode, missing fields included', () => {
    expect(unreadableReason({ name: 'x', data: '{"n":1}', opts: '{"attempts":3}', progress: '50' })).toBeUndefined();
    expect(unreadableReason({})).toBeUndefined();
    expect(unreadableReason({ data: '', opts: '' })).toBeUndefined();
  });

  it('names each field that does not decode, with the parse error', () => {
    expect(unreadableReason({ data: '{not json', opts: '{}' })).toMatch(/^job data is not JSON: .*JSON/);
    expect(unreadableReason({ data: '{}', opts: 'xx' })).toMatch(/^job options are not JSON: /);
    // JSON, but not options BullMQ can read: `null` throws (a TypeError) as it decodes them.
    expect(unreadableReason({ opts: 'null' })).toMatch(/^job options are not JSON: /);
    expect(unreadableReason({ progress: 'half' })).toMatch(/^job progress is not JSON: /);
    expect(unreadableReason({ data: '{', opts: '[', parent: '{' })?.split('; ').map((p) => p.split(':')[0])).toEqual([
      'job data is not JSON',
      'job options are not JSON',
      'job parent is not JSON',
    ]);
  });

  it("isJobDecodeError takes JSON.parse's errors", () => {
    let thrown: unknown;
    try {
      JSON.parse('{x');
    } catch (err) {
      thrown = err;
    }
    expect(isJobDecodeError(thrown)).toBe(true);
    expect(isJobDecodeError(new Error('Connection is closed.'))).toBe(false);
  });
});
