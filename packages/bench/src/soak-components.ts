/** Which part of tickwork a Redis key belongs to, from its name (prefix `tickwork`), for the soak's report. */
export type Component =
  | 'ledger records'
  | 'ledger step results'
  | 'finished and queued job hashes'
  | 'queue structures'
  | 'event streams'
  | 'dead-letter queues'
  | 'schedules and history'
  | 'overlap, locks, meta'
  | 'other';

/** BullMQ's per-queue keys that are not jobs (`<prefix>:<queue>:<name>`). */
const QUEUE_KEYS = new Set([
  'wait', 'active', 'paused', 'delayed', 'prioritized', 'completed', 'failed', 'stalled', 'stalled-check', 'meta', 'id',
  'limiter', 'marker', 'pc', 'de', 'repeat', 'waiting-children', 'waiting-deps', 'metrics',
]);

export function componentOf(key: string, prefix = 'tickwork'): Component {
  if (!key.startsWith(`${prefix}:`)) return 'other';
  const parts = key.slice(prefix.length + 1).split(':');
  const [head, second] = parts;
  if (head === 'ledger') return key.endsWith(':steps') ? 'ledger step results' : 'ledger records';
  if (head === 'schedule') return 'schedules and history';
  if (head === 'overlap' || head === 'lock' || head === 'meta') return 'overlap, locks, meta';
  if (head?.endsWith('.dlq')) return 'dead-letter queues';
  if (second === 'events') return 'event streams';
  if (second !== undefined && QUEUE_KEYS.has(second)) return 'queue structures';
  return 'finished and queued job hashes';
}
