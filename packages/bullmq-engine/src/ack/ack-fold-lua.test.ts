/**
 * The acknowledgements' script (ack-fold-lua.ts, ackFoldLua) is built around the installed BullMQ's own
 * moveToFinished, and its lean path (ack-lean-lua.ts) does what parts of that script do. What runs is
 * tested against real Redis and BullMQ in apps/worker (exactly-once/ack-fold.test.ts, compact-acks.test.ts);
 * this pins what a BullMQ upgrade could break quietly: foldAcks installs nothing (and the worker only logs
 * a warning) when moveToFinished no longer takes the KEYS it expects, and the text of every part of BullMQ's
 * script the lean path mirrors is the text it was written against (BullMQ 6.7.0). A failure here means:
 * read the new text, bring ack-lean-lua.ts in line with it, then record the new digests.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ackFoldLua } from './ack-fold-lua.js';
import { MOVE_TO_FINISHED_KEYS } from './ack-constants.js';

const require = createRequire(import.meta.url);
const { moveToFinished } = require(`bullmq/dist/cjs/scripts/moveToFinished-${MOVE_TO_FINISHED_KEYS}.js`) as { moveToFinished: { content: string; keys: number } };
const text = moveToFinished.content;

/** The SHA-1 (first 12 hex digits) of BullMQ 6.7.0's text of each part the lean path mirrors. */
const MIRRORED: Record<string, string> = {
  fetchNextJob: '7286a1d8b0ef',
  prepareJobForProcessing: '5c5e9e7f8668',
  promoteDelayedJobs: '37b64144dac4',
  moveJobFromPrioritizedToActive: '3fcdadb4d3dd',
  getNextDelayedTimestamp: 'c73c08817510',
  getQueueMetadata: '104f26d01d49',
  getPriorityScore: 'b7f0ece06529',
  removeLock: 'a87722a8f00f',
  removeJobKeys: '71fed197f7d7',
  trimEvents: 'b3bb57b8529d',
  getOrSetMaxEvents: '62a9f1e9c2e0',
  addBaseMarkerIfNeeded: 'aea54fac093c',
  // The script's own body, from its first line after the included functions.
  body: 'ae5cb28dfd59',
};

const digest = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 12);

function partOf(name: string): string {
  if (name === 'body') return text.slice(text.indexOf('local jobIdKey = KEYS[12]'));
  const start = text.indexOf(`local function ${name}(`);
  if (start < 0) return '';
  return text.slice(start, text.indexOf('\nend\n', start) + 5);
}

describe('ackFoldLua', () => {
  it("takes the installed BullMQ's moveToFinished, with the KEYS count it expects", () => {
    expect(moveToFinished.keys).toBe(MOVE_TO_FINISHED_KEYS);
    const lua = ackFoldLua(moveToFinished.content);
    expect(lua).toContain(`local function moveToFinished(KEYS, ARGV)\n${moveToFinished.content}\nend`);
  });

  it("is run beside the text of BullMQ's script its lean path mirrors, unchanged", () => {
    const found = Object.fromEntries(Object.keys(MIRRORED).map((name) => [name, digest(partOf(name))]));
    expect(found).toEqual(MIRRORED);
  });
});
