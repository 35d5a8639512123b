import { dlqListing, type DlqListing, type DlqListQuery } from '@tickwork/operations';
import { knownQueues, type Catalog, type QueueSet, type RedisClient } from '@tickwork/core';

export interface DeadLetterSource {
  catalog: Catalog;
  queues: QueueSet;
  redis: RedisClient;
}

/** Origin queues: the catalog's and any queue served before (a DLQ outlives the job that filled it). */
export async function originQueues(src: DeadLetterSource): Promise<string[]> {
  return [...new Set([...src.catalog.queues, ...(await knownQueues(src.redis, src.queues.prefix))])].sort();
}

/** Counts for every queue and one page of entries (see dlqListing). */
export async function loadDeadLetterPage(src: DeadLetterSource, query: DlqListQuery): Promise<DlqListing> {
  return dlqListing(src.queues, await originQueues(src), query);
}
