/**
 * A record riding in its acknowledgement (ack-ride.ts) relies on where the installed BullMQ's moveToFinished
 * writes the job fields it is given (ARGV[9]): right after its lock check, before it writes anything else, so
 * that every refusal it returns before that point (the codes ack-ride.ts sends through the fold again) left
 * nothing written. What runs is tested against real Redis and BullMQ in apps/worker (exactly-once/ack-fold.test.ts);
 * this pins the order, which a BullMQ upgrade could change quietly, and the record it carries.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { recordField } from './ack-ride.js';
import { unclaimedDoneRecord } from '@tickwork/exactly-once';
import { MOVE_TO_FINISHED_AT, MOVE_TO_FINISHED_KEYS } from './ack-constants.js';

const require = createRequire(import.meta.url);
const { moveToFinished } = require(`bullmq/dist/cjs/scripts/moveToFinished-${MOVE_TO_FINISHED_KEYS}.js`) as { moveToFinished: { content: string } };
const text = moveToFinished.content;

describe('the riding acknowledgement', () => {
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
  it("is the pair [field, done record] as JSON, timed by the acknowledgement's timestamp", () => {
    const args: unknown[] = [];
    args[MOVE_TO_FINISHED_AT.timestamp] = 1796322651841;
    for (const result of ['', 'j:{"a":1}', 'é😀'.repeat(40), 'x'.repeat(70_000)]) {
      expect(JSON.parse(recordField(args, 'w-abc', result))).toEqual(['tw', unclaimedDoneRecord('w-abc', '1796322651841', result)]);
    }
  });
});
