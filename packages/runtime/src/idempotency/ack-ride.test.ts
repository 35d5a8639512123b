/**
 * The riding acknowledgement (ack-ride.ts) relies on where the installed BullMQ's moveToFinished writes the
 * job fields it is given (ARGV[9]): right after its lock check, before it writes anything else, so that every
 * refusal it returns before that point (the codes ack-ride.ts sends through the fold) left nothing written.
 * What runs is tested against real Redis and BullMQ in apps/worker (exactly-once/ack-fold.test.ts); this
 * pins the order, which a BullMQ upgrade could change quietly, and the bytes of the record it carries.
 */
import { createRequire } from 'node:module';
import { Packr, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { ackRideLua, packStringPair } from './ack-ride.js';
import { MOVE_TO_FINISHED_KEYS } from './ledger-lua.js';

const require = createRequire(import.meta.url);
const { moveToFinished } = require(`bullmq/dist/cjs/scripts/moveToFinished-${MOVE_TO_FINISHED_KEYS}.js`) as { moveToFinished: { content: string } };
const text = moveToFinished.content;

describe('the riding acknowledgement', () => {
  it("is BullMQ's moveToFinished, unchanged, after a check for a run record", () => {
    expect(ackRideLua(text)).toBe(`if redis.call('HEXISTS', KEYS[12], 'tw') == 1 then return 'tw:has-record' end\n${text}`);
  });

  it('relies on BullMQ writing the job fields first, right after the lock check, and refusing only before', () => {
    const start = text.indexOf('local jobIdKey = KEYS[12]');
    const fields = text.indexOf('updateJobFields(jobIdKey, ARGV[9])');
    expect(start).toBeGreaterThan(0);
    expect(fields).toBeGreaterThan(start);
    const before = text.slice(start, fields);
    // Nothing but reads before the fields, the lock check aside (removeLock: -2, -6).
    expect(new Set([...before.matchAll(/rcall\("(\w+)"/g)].map((m) => m[1]))).toEqual(new Set(['EXISTS', 'SCARD', 'ZCARD']));
    expect(before).toMatch(/local errorCode = removeLock\(jobIdKey, KEYS\[5\], token, ARGV\[1\]\)\s*if errorCode < 0 then\s*return errorCode\s*end\s*$/);
    expect([...before.matchAll(/return (-?\w+)/g)].map((m) => m[1])).toEqual(['-4', '-9', 'errorCode']);
    // The job missing: the else of the EXISTS check, at the script's end.
    expect(text.trimEnd()).toMatch(/else\s*return -1\s*end$/);
  });
});

describe('the riding record field', () => {
  // As BullMQ packs the job fields it is given (redis-queue-backend.js), which Redis's cmsgpack reads.
  const bullmqPacker = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
  const lengths = [0, 1, 31, 32, 255, 256, 65_535, 65_536, 70_000];

  it.each(lengths)('is the bytes msgpackr writes for [field, value] with a value of %i bytes', (n) => {
    const value = 'd|w-abc|1796322651841|1|'.concat('x'.repeat(n)).slice(0, n);
    expect(packStringPair('tw', value).equals(bullmqPacker.pack(['tw', value]))).toBe(true);
  });

  it('counts UTF-8 bytes, not characters', () => {
    for (const value of ['é', 'é'.repeat(16), 'é'.repeat(128), '€'.repeat(21_846), '😀'.repeat(10)]) {
      const packed = packStringPair('tw', value);
      expect(packed.equals(bullmqPacker.pack(['tw', value]))).toBe(true);
      expect(unpack(packed)).toEqual(['tw', value]);
    }
  });
});
