import type { Pool, PoolClient } from 'pg';
import type { Catalog } from '@tickwork/core';
import { TickworkError } from '@tickwork/core';
import type { Logger } from '@tickwork/core';
import { addOptions, checkedPayload } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { checkedOutboxOptions, outboxJobId } from './outbox.js';
import { inTransaction, sqlState } from './pool.js';

export interface OutboxRelayOptions {
  pool: Pool;
  queues: QueueSet;
  catalog: Catalog;
  log: Logger;
  /** Pause between passes that found nothing to relay. Default 1000 ms. */
  intervalMs?: number;
  /** Rows taken per transaction. Default 100. */
  batchSize?: number;
  maxPayloadBytes?: number;
  /** Test seam: runs after a batch's jobs were added, before its rows are deleted and committed. */
  afterAdd?: (jobIds: readonly string[]) => Promise<void>;
}

export interface RelayPass {
  /** Rows locked by this pass. */
  taken: number;
  /** Rows added to BullMQ and deleted. */
  relayed: number;
  /** Rows set aside (failed_at, failed_reason) because they can never be enqueued. */
  setAside: number;
}

export interface OutboxRelay {
  relayOnce(): Promise<RelayPass>;
  /** Stops after the pass in flight (which commits or rolls back as a whole). */
  stop(): Promise<void>;
}

interface Row {
  id: string;
  job_name: string;
  payload: unknown;
  job_id: string | null;
  opts: unknown;
  ordering_key: string | null;
  age_ms: string;
}

/**
 * Rows this pass may relay, in id order. Rows without a key are all eligible. For a key, only the key's
 * oldest pending rows are: those of this pass's rows older than the oldest pending row of that key this
 * pass did not lock (another relay holds it, or it is past the batch). So at any time at most one relay
 * relays a key, from its head, in id order; the rest of the key waits for a later pass.
 */
async function eligibleRows(client: PoolClient, rows: Row[]): Promise<Row[]> {
  const keys = [...new Set(rows.flatMap((r) => (r.ordering_key === null ? [] : [r.ordering_key])))];
  if (keys.length === 0) return rows;
  const { rows: foreign } = await client.query<{ ordering_key: string; first: string }>(
    `SELECT ordering_key, min(id) AS first FROM tickwork_outbox
     WHERE ordering_key = ANY($1::text[]) AND failed_at IS NULL AND NOT (id = ANY($2::bigint[]))
     GROUP BY ordering_key`,
    [keys, rows.map((r) => r.id)],
  );
  const firstForeign = new Map(foreign.map((f) => [f.ordering_key, BigInt(f.first)]));
  return rows.filter((r) => {
    const first = r.ordering_key === null ? undefined : firstForeign.get(r.ordering_key);
    return first === undefined || BigInt(r.id) < first;
  });
}

/**
 * One relay pass, one transaction: lock up to `batchSize` pending rows in id order (`FOR UPDATE SKIP
 * LOCKED`: relays in other processes take other rows), add each eligible row's job to its queue under a
 * deterministic id, delete those rows, commit.
 *
 * Exactly once: if the relay dies after adding and before its COMMIT, PostgreSQL aborts its transaction
 * (the connection closes), the rows are unlocked and still there, and the next pass adds them again
 * under the same job ids, which BullMQ ignores while it keeps the job (and which the idempotency ledger
 * remembers for IDEMPOTENCY_RETENTION_HOURS after it ran, like any job id a producer chose).
 *
 * A row that can never be enqueued (its job is not in this catalog, its payload or options fail
 * validation: written by an older producer or by hand) is set aside with `failed_at` and
 * `failed_reason` in the same transaction and logged; it does not block the rows behind it.
 */
export function relayOutboxOnce(opts: Omit<OutboxRelayOptions, 'intervalMs'>): Promise<RelayPass> {
  const { pool, queues, catalog, log } = opts;
  const batchSize = opts.batchSize ?? 100;

  const relayRow = async (client: PoolClient, row: Row): Promise<string | undefined> => {
    let checked: ReturnType<typeof checkedPayload>;
    let options: ReturnType<typeof checkedOutboxOptions>;
    try {
      checked = checkedPayload(catalog, row.job_name, row.payload, opts.maxPayloadBytes);
      options = checkedOutboxOptions({ ...(row.opts as object), ...(row.job_id !== null && { jobId: row.job_id }) });
    } catch (err) {
      if (!(err instanceof TickworkError)) throw err;
      await client.query('UPDATE tickwork_outbox SET failed_at = now(), failed_reason = $2 WHERE id = $1', [row.id, err.message]);
      log.error({ outboxId: row.id, jobName: row.job_name, reason: err.message }, 'outbox row set aside: it can never be enqueued');
      return undefined;
    }
    const jobId = outboxJobId(row.id, options.jobId);
    // A delay counts from when the row was written, not from when it is relayed.
    const delayMs = options.delayMs === undefined ? undefined : Math.max(0, options.delayMs - Number(row.age_ms));
    await queues.get(checked.job.queue).add(checked.job.name, checked.payload, addOptions(checked.job, { ...options, jobId, delayMs }));
    return jobId;
  };

  return inTransaction(pool, async (client): Promise<RelayPass> => {
    const { rows } = await client.query<Row>(
      `SELECT id, job_name, payload, job_id, opts, ordering_key,
              (extract(epoch FROM now() - created_at) * 1000)::bigint AS age_ms
       FROM tickwork_outbox WHERE failed_at IS NULL
       ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [batchSize],
    );
    if (rows.length === 0) return { taken: 0, relayed: 0, setAside: 0 };
    const relayed: string[] = [];
    const jobIds: string[] = [];
    let setAside = 0;
    for (const row of await eligibleRows(client, rows)) {
      const jobId = await relayRow(client, row);
      if (jobId === undefined) setAside++;
      else {
        relayed.push(row.id);
        jobIds.push(jobId);
      }
    }
    await opts.afterAdd?.(jobIds);
    if (relayed.length > 0) await client.query('DELETE FROM tickwork_outbox WHERE id = ANY($1::bigint[])', [relayed]);
    return { taken: rows.length, relayed: relayed.length, setAside };
  });
}

/**
 * Relays the outbox until stopped: a pass right after one that filled its batch, else every `intervalMs`.
 * A failed pass (PostgreSQL or Redis unreachable) rolls back whole, is logged, and is tried again later.
 */
export function startOutboxRelay(opts: OutboxRelayOptions): OutboxRelay {
  const { log } = opts;
  const intervalMs = opts.intervalMs ?? 1000;
  const batchSize = opts.batchSize ?? 100;
  const relayOnce = () => relayOutboxOnce(opts);

  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      let more = false;
      try {
        const pass = await relayOnce();
        if (pass.relayed > 0) log.debug(pass, 'outbox rows relayed');
        // A full batch that moved something: more may be waiting. A full batch of rows all waiting behind
        // another relay's head of their key moved nothing: pause rather than spin on them.
        more = pass.taken === batchSize && pass.relayed + pass.setAside > 0;
      } catch (err) {
        // Nothing is lost: the pass rolled back and its rows wait for the next one. Never log the error
        // object itself (pg-pool may hang the client, with its password, on it).
        const e = err as Error;
        log.warn({ reason: e.message, code: sqlState(err) }, 'outbox relay pass failed; retrying');
      }
      if (!more && !stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, intervalMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  })();

  return {
    relayOnce,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
