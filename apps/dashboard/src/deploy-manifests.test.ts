/** deploy/kubernetes, as far as the dashboard is concerned (see the worker's deploy-manifests.test.ts). */
import { containerEnv, manifest, podSpecOf, readManifests, TEST_SECRETS as secrets } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { loadDashboardEnv } from './env.js';

const all = readManifests();
const container = podSpecOf(manifest(all, 'Deployment', 'tickwork-dashboard')).containers[0];
if (!container) throw new Error('the dashboard Deployment has no container');

describe('the dashboard in deploy/kubernetes', () => {
  it('gets an environment its own env schema accepts, its password from the Secret and never written in a manifest', () => {
    const env = loadDashboardEnv(containerEnv(all, container, secrets));
    expect(env.DASHBOARD_PASSWORD).toBe('correct horse battery');
    expect(container.env?.find((v) => v.name === 'DASHBOARD_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: 'tickwork-secrets', key: 'dashboard-password' });
    expect(container.ports?.find((p) => p.name === 'http')?.containerPort).toBe(env.PORT);
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  });

  it('is not exposed outside the cluster by the manifests (it can retry and delete jobs)', () => {
    const service = manifest(all, 'Service', 'tickwork-dashboard').spec as { type?: string };
    expect(service.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(all.filter((m) => m.kind === 'Ingress')).toEqual([]);
  });
});
