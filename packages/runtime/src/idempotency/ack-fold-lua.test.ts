/**
 * How the fold's script hands BullMQ's moveToFinished its KEYS and ARGV (ledger-lua.ts, ackFoldLua). What
 * runs is tested against real Redis and BullMQ in apps/worker (exactly-once/ack-fold.test.ts); this pins
 * the choice for a BullMQ release whose script would count or walk its arguments.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ackFoldLua } from './ledger-lua.js';

const COPIES = 'moveToFinished({unpack(KEYS, 1, #KEYS - 1)}, {unpack(ARGV, 1, base)})';

describe('ackFoldLua', () => {
  it('hands a script that reads its arguments by index the fold\'s own KEYS and ARGV (no copies per call)', () => {
    const lua = ackFoldLua("local a = KEYS[1]\nreturn redis.call('GET', a) .. ARGV[2]");
    expect(lua).toContain('return {reply, moveToFinished(KEYS, ARGV)}');
    expect(lua).not.toContain(COPIES);
  });

  it.each(['return #ARGV', 'local n = # KEYS', 'return {unpack(ARGV)}', 'for i, k in ipairs(KEYS) do end', 'for k, v in pairs(ARGV) do end'])(
    'gives a script that sizes or walks its arguments exact copies of its own (%s)',
    (body) => {
      expect(ackFoldLua(body)).toContain(`return {reply, ${COPIES}}`);
    },
  );

  it("hands the installed BullMQ's moveToFinished the fold's own KEYS and ARGV", () => {
    const require = createRequire(import.meta.url);
    const { moveToFinished } = require('bullmq/dist/cjs/scripts/moveToFinished-14.js') as { moveToFinished: { content: string } };
    expect(ackFoldLua(moveToFinished.content)).not.toContain(COPIES);
  });
});
