import { batchForeignConsumers, type BatchStore } from '@tickwork/bullmq-engine';
import type { Logger, RedisOutageLog } from '@tickwork/core';

/** How often a runner looks for consumers it does not own on its queue (one CLIENT LIST: cheap). */
export const FOREIGN_CHECK_MS = 60_000;
/** The first look, this long after the runner starts. */
export const FIRST_FOREIGN_CHECK_MS = 2_000;

/**
 * Looks for BullMQ Workers on a batch job's queue that no tickwork batch runner owns (a stock BullMQ Worker,
 * an older tickwork without batch jobs): each takes jobs the batches should, and on a store without BullMQ
 * locks its stalled check would move running batches' jobs back. Each one is logged once, with what to do;
 * `tickwork_batch_foreign_consumers{queue}` holds how many the last look found.
 */
export class ForeignConsumerWatch {
  private readonly logged = new Set<string>();

  constructor(
    private readonly store: BatchStore,
    private readonly log: Logger,
    private readonly outage?: RedisOutageLog,
  ) {}

  async check(): Promise<void> {
    const queue = this.store.queue;
    try {
      const found = await this.store.foreignConsumers();
      batchForeignConsumers.set({ queue }, found.length);
      for (const c of found) {
        const who = `${c.name}|${c.addr}|${c.id}`;
        if (this.logged.has(who)) continue;
        this.logged.add(who);
        this.log.warn(
          { queue, consumer: c.name, addr: c.addr, clientId: c.id },
          `a consumer tickwork does not own is attached to batch job queue ${queue} (a BullMQ Worker: another app, or a tickwork without this batch job): the queue is its batch runner's alone; stop that consumer (its jobs run outside the batches)`,
        );
      }
    } catch (err) {
      if (!this.outage?.note(err)) this.log.warn({ err: { message: (err as Error).message }, queue }, "could not list the batch job queue's consumers; looking again later");
    }
  }
}
