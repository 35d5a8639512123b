import type { Logger } from '@tickwork/core';
import { defineScript, runScript } from '@tickwork/core';
import { COMPACT_LUA } from './ledger-lua.js';
import type { IdempotencyLedger } from './ledger.js';
import { repeatPass, type RepeatedPass } from '../repeat-pass.js';

const COMPACT_SCRIPT = defineScript(COMPACT_LUA);

/**
 * Runs looked at per script call. A call holds Redis while it runs (about 5 µs a run: a GET, a SHA-1, an
 * SCARD, an SADD and a DEL), so a chunk is kept to about a millisecond: a BullMQ command never waits
 * longer behind it than behind one of its own scripts.
 */
const DEFAULT_CHUNK = 200;
/** Redis's default `set-max-intset-entries`: the most members a fingerprint set may hold and stay 8 bytes each. */
const DEFAULT_INTSET_LIMIT = 512;

export interface LedgerCompactorOptions {
  ledger: IdempotencyLedger;
  /** The queues whose runs it compacts: their records' bases (one on one Redis, one per queue's tag on a cluster). */
  queues: readonly string[];
  log: Logger;
  /** How often due stages are looked for. Default: a quarter of the ledger's bucket, at most 5 s. */
  intervalMs?: number;
  chunk?: number;
}

export interface LedgerCompactor {
  /** Compacts every stage that is due now; resolves with the runs compacted. */
  compactOnce(): Promise<number>;
  /** Stops after the call in flight (each call is one script: atomic). */
  stop(): Promise<void>;
}

/**
 * The sweeper of done records (compact-lua.ts): every `intervalMs` it compacts the stages whose full-record
 * span has passed, a chunk per script call, until none is due. Every worker runs one for the queues it
 * serves: each chunk is taken and compacted in one script, so sweepers on several workers share the stages
 * without coordinating, and a deployment compacts as long as any of its workers runs. Should none run,
 * nothing is lost: the full records keep their whole window, at their full size.
 */
export function startLedgerCompactor(opts: LedgerCompactorOptions): LedgerCompactor {
  const { ledger, log } = opts;
  const intervalMs = opts.intervalMs ?? Math.min(5000, Math.ceil(ledger.bucketMs / 4));
  const chunk = opts.chunk ?? DEFAULT_CHUNK;
  const roots = [...new Set(opts.queues.map((q) => ledger.fpRootOf(q)))];
  let limit: Promise<number> | undefined;
  // The loop below starts its first pass before repeatPass returns: until then it is not stopped.
  let repeated: RepeatedPass | undefined;
  const stopped = (): boolean => repeated?.isStopped() ?? false;

  const compactRoot = async (root: string): Promise<number> => {
    const argv = [root, ledger.fullRecordMs, ledger.bucketMs, chunk, await (limit ??= intsetLimit(ledger))];
    let compacted = 0;
    while (!stopped()) {
      const [, done, due] = (await runScript(ledger.redis, COMPACT_SCRIPT, [`${root}:stages`], argv)) as [number, number, number];
      compacted += done;
      if (due === 0) break;
      // Let the worker's own commands through between chunks.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return compacted;
  };

  const compactOnce = async (): Promise<number> => {
    let compacted = 0;
    for (const root of roots) compacted += await compactRoot(root);
    return compacted;
  };

  const loop = repeatPass(intervalMs, async () => {
    try {
      const compacted = await compactOnce();
      if (compacted > 0) log.debug({ compacted }, 'done runs compacted');
    } catch (err) {
      // Nothing is lost: a chunk is one script, and what it did not reach waits for the next pass.
      log.warn({ err: { message: (err as Error).message } }, 'ledger compaction failed; retrying');
    }
  });

  repeated = loop;
  return { compactOnce, stop: () => loop.stop() };
}

/** The server's `set-max-intset-entries` (512 unless changed), or 512 where CONFIG is not allowed. */
async function intsetLimit(ledger: IdempotencyLedger): Promise<number> {
  try {
    const reply = (await ledger.redis.config('GET', 'set-max-intset-entries')) as unknown;
    const value = Array.isArray(reply) ? Number(reply[1]) : NaN;
    return Number.isInteger(value) && value >= 16 ? Math.min(value, 4096) : DEFAULT_INTSET_LIMIT;
  } catch {
    return DEFAULT_INTSET_LIMIT;
  }
}
