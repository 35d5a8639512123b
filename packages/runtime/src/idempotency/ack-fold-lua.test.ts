/**
 * The acknowledgements' script (ack-fold-lua.ts, ackFoldLua) is built around the installed BullMQ's own
 * moveToFinished. What runs is tested against real Redis and BullMQ in apps/worker
 * (exactly-once/ack-fold.test.ts); this pins what a BullMQ upgrade could break quietly: foldAcks installs
 * nothing (and the worker only logs a warning) when moveToFinished no longer takes the KEYS it expects.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ackFoldLua } from './ack-fold-lua.js';
import { MOVE_TO_FINISHED_KEYS } from './ledger-lua.js';

describe('ackFoldLua', () => {
  it("takes the installed BullMQ's moveToFinished, with the KEYS count it expects", () => {
    const require = createRequire(import.meta.url);
    const { moveToFinished } = require(`bullmq/dist/cjs/scripts/moveToFinished-${MOVE_TO_FINISHED_KEYS}.js`) as { moveToFinished: { content: string; keys: number } };
    expect(moveToFinished.keys).toBe(MOVE_TO_FINISHED_KEYS);
    const lua = ackFoldLua(moveToFinished.content);
    expect(lua).toContain(`local function moveToFinished(KEYS, ARGV)\n${moveToFinished.content}\nend`);
  });
});
