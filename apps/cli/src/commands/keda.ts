import { renameSync, writeFileSync } from 'node:fs';
import { queueKeyspace, queueStructureKey } from '@tickwork/core';
import type { Command } from './command.js';
import { UsageError } from '../usage-error.js';

/** Where `pnpm gen:keda` writes the manifests, from the repository's root. */
export const KEDA_FILE = 'deploy/kubernetes/worker-scaledobject.yaml';
/** The in-cluster Redis of deploy/kubernetes (redis.yaml's Service). */
const DEFAULT_ADDRESS = 'tickwork-redis:6379';
/** Waiting jobs one worker replica is meant to carry. */
const LIST_LENGTH = 50;

export interface KedaOptions {
  prefix: string;
  queues: readonly string[];
  /** One Redis: its host:port. */
  address?: string;
  /** A Redis Cluster: some of its nodes (host:port). The wait lists then carry each queue's hash tag. */
  clusterNodes?: readonly string[];
}

/**
 * The worker's KEDA manifests for a catalog: a TriggerAuthentication with the Redis password, and a
 * ScaledObject with one trigger per queue on the length of its BullMQ wait list. Made, not written by hand,
 * so a job on a new queue gets its trigger by running the generator again (`pnpm gen:keda`).
 */
export function kedaManifests(opts: KedaOptions): string {
  const clustered = opts.clusterNodes !== undefined;
  const trigger = (queue: string) => {
    const wait = queueStructureKey(queueKeyspace(opts.prefix, queue, clustered), queue, 'wait');
    const where = clustered ? `        addresses: ${JSON.stringify(opts.clusterNodes?.join(','))}` : `        address: ${JSON.stringify(opts.address ?? DEFAULT_ADDRESS)}`;
    return [
      `    - type: ${clustered ? 'redis-cluster' : 'redis'}`,
      '      metadata:',
      where,
      `        listName: ${JSON.stringify(wait)}`,
      `        listLength: "${LIST_LENGTH}"`,
      '      authenticationRef:',
      '        name: tickwork-redis',
    ].join('\n');
  };
  return `# Generated from the job catalog by \`pnpm gen:keda\` (\`tickwork keda --write <this file>\`): after adding a
# job on a new queue, run it again (a test fails until this file matches the catalog). Tune the replicas or
# the backlog per replica with a kustomize patch, not here. For a Redis Cluster: \`tickwork keda
# --cluster-nodes host:port,...\` (docs/kubernetes.md).
#
# KEDA scales the workers on backlog: for each queue, the length of BullMQ's wait list
# (\`<QUEUE_PREFIX>:<queue>:wait\`); KEDA takes the largest replica count any trigger asks for. listLength is
# the backlog one replica is meant to carry. Delayed jobs (future occurrences, backoffs) are not backlog and
# are not counted; neither are prioritized jobs (a sorted set).
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: tickwork-redis
spec:
  secretTargetRef:
    - parameter: password
      name: tickwork-secrets
      key: redis-password
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: tickwork-worker
spec:
  scaleTargetRef:
    name: tickwork-worker
  minReplicaCount: 1 # scheduled occurrences need a worker on time; 0 would add a cold start to each
  maxReplicaCount: 20
  pollingInterval: 10
  cooldownPeriod: 120
  triggers:
${opts.queues.map(trigger).join('\n')}
`;
}

const HOST_PORT = /^[^\s,:]+:\d{1,5}$/;

export const kedaCommand: Command = {
  name: 'keda',
  usage: `tickwork keda [--write FILE] [--address HOST:PORT | --cluster-nodes HOST:PORT,...]    (pnpm gen:keda writes ${KEDA_FILE})`,
  summary: "Print the worker's KEDA autoscaling manifests, one trigger per queue of the catalog (--write: to a file).",
  valueFlags: ['write', 'address', 'cluster-nodes'],
  async run(ctx) {
    const address = ctx.flags.address;
    const nodes = ctx.flags['cluster-nodes'];
    if (typeof address === 'string' && typeof nodes === 'string') throw new UsageError('give --address (one Redis) or --cluster-nodes (a Redis Cluster), not both');
    if (typeof address === 'string' && !HOST_PORT.test(address)) throw new UsageError(`--address must be host:port, got ${JSON.stringify(address)}`);
    const clusterNodes = typeof nodes === 'string' ? nodes.split(',').map((n) => n.trim()) : undefined;
    const bad = clusterNodes?.find((n) => !HOST_PORT.test(n));
    if (bad !== undefined) throw new UsageError(`--cluster-nodes must be host:port entries separated by commas, got ${JSON.stringify(bad)}`);
    const queues = ctx.catalog.queues;
    const yaml = kedaManifests({
      prefix: ctx.env.QUEUE_PREFIX,
      queues,
      ...(typeof address === 'string' && { address }),
      ...(clusterNodes && { clusterNodes }),
    });
    const file = ctx.flags.write;
    if (typeof file !== 'string') {
      ctx.out.result({ queues, manifests: yaml }, () => yaml.trimEnd());
      return;
    }
    // Written beside and renamed into place: a failed write never leaves half a manifest.
    writeFileSync(`${file}.tmp`, yaml);
    renameSync(`${file}.tmp`, file);
    ctx.out.result({ file, queues }, () => `wrote ${file}: ${queues.length} trigger(s), for queues ${queues.join(', ')}`);
  },
};
