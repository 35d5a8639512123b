/**
 * deploy/kubernetes, as far as the worker is concerned: the env the pod gets is what loadWorkerEnv accepts,
 * the kubelet waits out the drain, the probes ask /readyz and /healthz on the app's port, and KEDA watches the wait
 * list of every queue of the catalog under the configured prefix (with the Redis password): `pnpm gen:keda`
 * writes those triggers from the catalog (apps/cli keda.test.ts).
 */
import { catalog } from '@tickwork/jobs';
import { containerEnv, manifest, podSpecOf, readManifests, TEST_SECRETS as secrets } from '@tickwork/testkit';
import { QueueKeys } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { loadWorkerEnv } from './env.js';

const all = readManifests();
const pod = podSpecOf(manifest(all, 'Deployment', 'tickwork-worker'));
const container = pod.containers[0];
if (!container) throw new Error('the worker Deployment has no container');
const env = loadWorkerEnv(containerEnv(all, container, secrets));

describe('the worker in deploy/kubernetes', () => {
  it('gets an environment its own env schema accepts, with Redis reached by password', () => {
    expect(env.REDIS_URL).toBe('redis://:f00dfeedf00dfeed@tickwork-redis:6379');
    expect(env.QUEUE_PREFIX).toBe('tickwork');
  });

  it('posts alerts to the webhook in the Secret when it has one, and starts without one', () => {
    expect(env.ALERT_WEBHOOK_URL).toBeUndefined();
    const withHook = { 'tickwork-secrets': { ...secrets['tickwork-secrets'], 'alert-webhook-url': 'https://hooks.example.com/T0/x' } };
    expect(loadWorkerEnv(containerEnv(all, container, withHook)).ALERT_WEBHOOK_URL).toBe('https://hooks.example.com/T0/x');
  });

  it('protects /metrics with the token in the Secret when it has one, and leaves it open without one', () => {
    expect(env.METRICS_TOKEN).toBeUndefined();
    const withToken = { 'tickwork-secrets': { ...secrets['tickwork-secrets'], 'metrics-token': 'a'.repeat(48) } };
    expect(loadWorkerEnv(containerEnv(all, container, withToken)).METRICS_TOKEN).toBe('a'.repeat(48));
  });

  it('is given longer to stop than its drain and hard deadline take, so scaling in never kills a drain', () => {
    const drainAndDeadlineSeconds = env.DRAIN_TIMEOUT_MS / 1000 + 10;
    expect(pod.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(drainAndDeadlineSeconds);
  });

  it('is probed for readiness on /readyz and for liveness on /healthz, at the port it listens on', () => {
    const port = container.ports?.find((p) => p.name === 'http')?.containerPort;
    expect(port).toBe(env.PORT);
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  });

  it("is scaled by KEDA on the wait list of every catalog queue, and nothing else, with the Redis password", () => {
    const scaled = manifest(all, 'ScaledObject', 'tickwork-worker').spec as {
      scaleTargetRef: { name: string };
      minReplicaCount: number;
      triggers: { type: string; metadata: { address: string; listName: string; listLength: string }; authenticationRef?: { name: string } }[];
    };
    expect(scaled.scaleTargetRef.name).toBe('tickwork-worker');
    // Scheduled occurrences must find a worker on time: never scaled to zero.
    expect(scaled.minReplicaCount).toBeGreaterThanOrEqual(1);
    const keys = new QueueKeys(env.QUEUE_PREFIX);
    const expected = [...catalog.queues].map((q) => keys.getKeys(q).wait).sort();
    const watched = scaled.triggers.map((t) => t.metadata.listName).sort();
    const missing = catalog.queues.filter((q) => !watched.includes(keys.toKey(q, 'wait')));
    const hint = `deploy/kubernetes/worker-scaledobject.yaml must have one KEDA trigger per queue of the catalog${missing.length > 0 ? ` (none for ${missing.join(', ')})` : ''}: run \`pnpm gen:keda\``;
    expect(watched, hint).toEqual(expected);
    for (const t of scaled.triggers) {
      expect(t.type).toBe('redis');
      expect(t.metadata.address).toBe('tickwork-redis:6379');
      expect(Number(t.metadata.listLength)).toBeGreaterThan(0);
      expect(t.authenticationRef?.name).toBe('tickwork-redis');
    }
    const auth = manifest(all, 'TriggerAuthentication', 'tickwork-redis').spec as { secretTargetRef: { parameter: string; name: string; key: string }[] };
    expect(auth.secretTargetRef).toEqual([{ parameter: 'password', name: 'tickwork-secrets', key: 'redis-password' }]);
  });

  it('leaves the replica count to KEDA', () => {
    expect(manifest(all, 'Deployment', 'tickwork-worker').spec?.replicas).toBeUndefined();
  });
});
