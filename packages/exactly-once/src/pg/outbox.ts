import type { ClientBase } from 'pg';
import { z } from 'zod';
import type { Catalog } from '@tickwork/core';
import type { AnyJob, EnqueueOptions, JobInput } from '@tickwork/core';
import { fieldIssues, InvalidJobOptionError } from '@tickwork/core';
import { checkedPayload } from '@tickwork/core';

export interface OutboxEnqueueOptions extends EnqueueOptions {
  /**
   * Jobs written with the same key are added to their queue in the order their rows were written (by
   * row id); see relay.ts for exactly what that guarantees. Without a key, no order is promised.
   */
  orderingKey?: string;
  /** Largest payload accepted (bytes of JSON), as `MAX_PAYLOAD_BYTES` for `ctx.enqueue`. */
  maxPayloadBytes?: number;
}

/** BullMQ refuses integer custom ids and ids with ':' at add time; refuse them when the row is written. */
const jobIdSchema = z
  .string()
  .min(1)
  .max(512)
  .refine((id) => `${Number.parseInt(id, 10)}` !== id, 'must not be an integer (BullMQ reserves those for its own ids)')
  .refine((id) => !id.includes(':'), 'must not contain ":"');

/** What an outbox row carries besides its payload: checked when the row is written and again when relayed. */
export const outboxOptionsSchema = z.strictObject({
  jobId: jobIdSchema.optional(),
  delayMs: z.number().int().min(0).optional(),
  priority: z.number().int().min(0).max(2_097_152).optional(),
});

export function checkedOutboxOptions(opts: unknown): z.output<typeof outboxOptionsSchema> {
  const parsed = outboxOptionsSchema.safeParse(opts);
  if (!parsed.success) throw new InvalidJobOptionError('enqueue options', fieldIssues(parsed.error.issues));
  return parsed.data;
}

/** The BullMQ job id a relayed row gets: its own `jobId`, else `outbox-<row id>` (one per row, forever). */
export function outboxJobId(rowId: string, jobId: string | null | undefined): string {
  return jobId ?? `outbox-${rowId}`;
}

/**
 * Enqueues `job` inside the caller's transaction: validates the payload exactly like `enqueue` (schema
 * and size; a bad payload throws and writes nothing) and inserts a row into `tickwork_outbox` through
 * `client`. The row, and so the job, exists only if the caller's transaction commits: "write the order
 * and enqueue its email" is one atomic unit. The outbox relay (the worker, with OUTBOX_DATABASE_URL)
 * moves committed rows to BullMQ. `client` must be the client running the caller's transaction (a Pool
 * would commit the row on its own). Returns the row id and the BullMQ job id the job will have.
 */
export async function enqueueInTransaction<J extends AnyJob>(
  client: Pick<ClientBase, 'query'>,
  catalog: Catalog,
  job: J,
  data: JobInput<J>,
  opts: OutboxEnqueueOptions = {},
): Promise<{ outboxId: string; jobId: string }> {
  const { orderingKey, maxPayloadBytes, ...enqueueOpts } = opts;
  const { job: known, payload } = checkedPayload(catalog, job.name, data, maxPayloadBytes);
  const { jobId, ...rest } = checkedOutboxOptions(enqueueOpts);
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO tickwork_outbox (job_name, queue, payload, job_id, opts, ordering_key)
     VALUES ($1, $2, $3::jsonb, $4, $5::jsonb, $6) RETURNING id`,
    [known.name, known.queue, JSON.stringify(payload), jobId ?? null, JSON.stringify(rest), orderingKey ?? null],
  );
  const id = String(rows[0]?.id);
  return { outboxId: id, jobId: outboxJobId(id, jobId) };
}
