/**
 * Which part of tickwork a Redis key belongs to, judged from its name alone (plus, for BullMQ job keys,
 * whether the job has finished, which the caller looks up). Every key layout rule of the capacity estimate
 * lives here, so a change of layout (the ledger's, say) is one edit.
 */

export const COMPONENTS = [
  'ledger',
  'schedule-history',
  'schedules',
  'overlap',
  'dlq',
  'jobs-pending',
  'jobs-finished',
  'queue-events',
  'timeline',
  'tickwork-other',
  'not-tickwork',
] as const;
export type Component = (typeof COMPONENTS)[number];

/** What each component is, for the CLI and the dashboard. */
export const COMPONENT_HELP: Record<Component, string> = {
  ledger: 'idempotency ledger: records of runs with a key of their own, and step results (a run named by a generated job id keeps its record in its job)',
  'schedule-history': 'occurrence history per schedule',
  schedules: 'schedule definitions and due/claim/lex indexes, last success/failure, registrations, health',
  overlap: 'overlap state and skip lists',
  dlq: 'dead-letter queues (never trimmed)',
  'jobs-pending': 'waiting, delayed and active jobs',
  'jobs-finished': 'completed and failed jobs kept by removeOnComplete/removeOnFail',
  'queue-events': 'BullMQ event streams',
  timeline: "the charts' history: per-minute and per-hour counts of each queue and catalog schedule, and Redis memory (a fixed size each)",
  'tickwork-other': 'other keys under the prefix (queue metadata, locks, alert state)',
  'not-tickwork': 'keys outside the prefix',
};

/** BullMQ's per-queue keys that are not a job (queue-keys.ts of BullMQ) and tickwork's own, and where they count. */
const QUEUE_STRUCTURES: Record<string, Component> = {
  wait: 'jobs-pending',
  paused: 'jobs-pending',
  active: 'jobs-pending',
  delayed: 'jobs-pending',
  prioritized: 'jobs-pending',
  'waiting-children': 'jobs-pending',
  completed: 'jobs-finished',
  failed: 'jobs-finished',
  events: 'queue-events',
  meta: 'tickwork-other',
  id: 'tickwork-other',
  'stalled-check': 'tickwork-other',
  stalled: 'tickwork-other',
  repeat: 'tickwork-other',
  limiter: 'tickwork-other',
  pc: 'tickwork-other',
  marker: 'tickwork-other',
  // A batch job's batches in flight (the engine's batch stores): their leases and their ids; on BullMQ's
  // public paths, their leases and the done records of jobs committed but not yet acknowledged.
  batches: 'jobs-pending',
  'batch-ids': 'jobs-pending',
  'batch-leases': 'jobs-pending',
  'batch-done': 'ledger',
  'batch-format': 'tickwork-other',
  'batch-public': 'tickwork-other',
};
export const QUEUE_STRUCTURE_NAMES = Object.keys(QUEUE_STRUCTURES);

/**
 * The ledger's keys: `<prefix>:ledger:<idempotency key>` and its `...:steps`, and its compacted runs'
 * `<prefix>:ledger-fp:...` (stages, fingerprint sets and their shapes).
 */
export function isLedgerKey(key: string, prefix: string): boolean {
  return key.startsWith(`${prefix}:ledger:`) || key.startsWith(`${prefix}:ledger-fp:`);
}

/** A key's component, or the job hash whose state decides between pending and finished. */
export type KeyClass = { component: Component } | { jobHash: string };

export function classifyKey(key: string, prefix: string): KeyClass {
  if (!key.startsWith(`${prefix}:`)) return { component: 'not-tickwork' };
  if (isLedgerKey(key, prefix)) return { component: 'ledger' };
  const rest = key.slice(prefix.length + 1);
  // A queue's keys on Redis Cluster (`<prefix>:{<queue>}:...`, redis/keyspace.ts): classified as the
  // single-Redis layout under the tagged prefix.
  if (rest.startsWith('{') && !rest.startsWith('{sched:')) {
    const end = rest.indexOf('}:');
    if (end > 0) return classifyKey(key, `${prefix}:${rest.slice(0, end + 1)}`);
  }
  // The schedule store: `{sched:<k>}:<index>` and a schedule's history `{sched:<k>}:h:<id>:history|records|last-*|timeline`.
  if (rest.startsWith('{sched:')) {
    if (/^\{sched:\d+\}:h:.*:timeline$/.test(rest)) return { component: 'timeline' };
    return { component: /^\{sched:\d+\}:h:.*:(history|records)$/.test(rest) ? 'schedule-history' : 'schedules' };
  }
  const sep = rest.indexOf(':');
  const head = sep < 0 ? rest : rest.slice(0, sep);
  const tail = sep < 0 ? '' : rest.slice(sep + 1);
  switch (head) {
    case 'schedule':
      return { component: /:(history|records)$/.test(tail) ? 'schedule-history' : 'schedules' };
    case 'overlap':
      return { component: 'overlap' };
    case 'stalls':
      // A run's note of its stall count at its last progress (the worker on BullMQ's public paths).
      return { component: 'ledger' };
    case 'meta':
      if (tail.startsWith('timeline:')) return { component: 'timeline' };
      return { component: tail.startsWith('schedule') ? 'schedules' : 'tickwork-other' };
    case 'timeline':
      // A queue's chart history, `<prefix>:timeline:<queue>` (timeline/writer.ts).
      return { component: 'timeline' };
    case 'lock':
    case '':
      return { component: 'tickwork-other' };
  }
  // Otherwise `<queue>:...`: a BullMQ queue (queue names cannot contain ':').
  if (tail === '') return { component: 'tickwork-other' };
  const dlq = head.endsWith('.dlq');
  const structure = QUEUE_STRUCTURES[tail];
  if (structure) return { component: dlq ? 'dlq' : structure };
  if (tail.startsWith('de:')) return { component: 'tickwork-other' }; // deduplication ids
  // A BullMQ job scheduler (`queue.upsertJobScheduler`): its definition `repeat:<scheduler id>` (a hash
  // that is no job) and the jobs it adds, `repeat:<scheduler id>:<ms>` with their `:lock`, `:logs`...
  if (tail.startsWith('repeat:')) {
    const job = /^(repeat:.+:\d+)(?::(?:lock|logs|dependencies|processed|failed|unsuccessful))?$/.exec(tail);
    if (job) return { jobHash: `${prefix}:${head}:${job[1] ?? ''}` };
    return { component: dlq ? 'dlq' : 'tickwork-other' };
  }
  if (dlq) return { component: 'dlq' };
  // `<id>`, `<id>:lock`, `<id>:logs`, `<id>:dependencies`...: the job's, pending or finished with it.
  const idEnd = tail.indexOf(':');
  return { jobHash: `${prefix}:${head}:${idEnd < 0 ? tail : tail.slice(0, idEnd)}` };
}

/** A job hash's component once its `finishedOn` field is known. */
export function jobComponent(finished: boolean): Component {
  return finished ? 'jobs-finished' : 'jobs-pending';
}
