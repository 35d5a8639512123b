/** deploy/kubernetes, as far as the scheduler is concerned (see the worker's deploy-manifests.test.ts). */
import { containerEnv, manifest, podSpecOf, readManifests, TEST_SECRETS as secrets } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { loadSchedulerEnv } from './env.js';

const all = readManifests();
const deployment = manifest(all, 'Deployment', 'tickwork-scheduler');
const container = podSpecOf(deployment).containers[0];
if (!container) throw new Error('the scheduler Deployment has no container');

describe('the scheduler in deploy/kubernetes', () => {
  it('gets an environment its own env schema accepts, in production mode (no staging speed-up)', () => {
    const env = loadSchedulerEnv(containerEnv(all, container, secrets));
    expect(env.NODE_ENV).toBe('production');
    expect(env.SCHEDULE_SPEEDUP).toBeUndefined();
    expect(env.ALERT_WEBHOOK_URL).toBeUndefined();
    const withHook = { 'tickwork-secrets': { ...secrets['tickwork-secrets'], 'alert-webhook-url': 'https://hooks.example.com/T0/x' } };
    expect(loadSchedulerEnv(containerEnv(all, container, withHook)).ALERT_WEBHOOK_URL).toBe('https://hooks.example.com/T0/x');
    expect(env.METRICS_TOKEN).toBeUndefined();
    const withToken = { 'tickwork-secrets': { ...secrets['tickwork-secrets'], 'metrics-token': 'b'.repeat(48) } };
    expect(loadSchedulerEnv(containerEnv(all, container, withToken)).METRICS_TOKEN).toBe('b'.repeat(48));
    expect(container.ports?.find((p) => p.name === 'http')?.containerPort).toBe(env.PORT);
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  });

  it('runs more than one replica: each occurrence is still enqueued once, and a rescheduled pod misses nothing', () => {
    expect(deployment.spec?.replicas).toBeGreaterThanOrEqual(2);
  });
});
