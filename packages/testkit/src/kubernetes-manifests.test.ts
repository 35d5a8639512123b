/**
 * deploy/kubernetes as a whole: what every app relies on and kubectl would accept broken. Each app's own
 * package checks its pod's env against its env schema (deploy-manifests.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { redisClusterNodes, redisTargetOf, redisUrl } from '@tickwork/core';
import { containerEnv, KUBERNETES_DIR, manifest, podSpecOf, readManifests, TEST_SECRETS, type Manifest } from './kubernetes.js';
import { REPO_ROOT } from './paths.js';

const all = readManifests();
const kustomization = parse(readFileSync(join(KUBERNETES_DIR, 'kustomization.yaml'), 'utf8')) as {
  resources: string[];
  images: { name: string }[];
};
const apps = ['scheduler', 'worker', 'dashboard'] as const;

describe('deploy/kubernetes', () => {
  it('lists every manifest file in the kustomization, and one image entry: the image of every app', () => {
    expect([...kustomization.resources].sort()).toEqual([...new Set(all.map((m) => m.file))].sort());
    const appImages = all.filter((m) => m.kind === 'Deployment').flatMap((m) => podSpecOf(m).containers.map((c) => c.image));
    expect(new Set(appImages)).toEqual(new Set(['tickwork']));
    expect(kustomization.images.map((i) => i.name)).toEqual(['tickwork']);
  });

  it.each(apps)('runs %s from the one image by its command, node on the app\'s compiled main (no shell in between)', (app) => {
    const [container, ...more] = podSpecOf(manifest(all, 'Deployment', `tickwork-${app}`)).containers;
    expect(more).toHaveLength(0);
    expect(container?.command).toEqual(['node', `apps/${app}/dist/main.js`]);
    expect(container?.args).toBeUndefined();
    // tsc compiles apps/<app>/src to apps/<app>/dist (rootDir src, outDir dist).
    expect(existsSync(join(REPO_ROOT, 'apps', app, 'src', 'main.ts')), `apps/${app}/src/main.ts`).toBe(true);
  });

  it('selects each workload by the labels its pods carry', () => {
    for (const m of all.filter((x) => x.kind === 'Deployment' || x.kind === 'StatefulSet')) {
      const spec = m.spec as { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> } } };
      expect({ [m.metadata.name]: spec.template.metadata.labels }).toMatchObject({ [m.metadata.name]: spec.selector.matchLabels });
    }
  });

  it('runs Redis as queues need it: AOF on a volume, a maxmemory with headroom, noeviction, a password from the Secret', () => {
    const redis = podSpecOf(manifest(all, 'StatefulSet', 'tickwork-redis')).containers[0];
    const args = redis?.args ?? [];
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect(flag('--appendonly')).toBe('yes');
    expect(flag('--maxmemory-policy')).toBe('noeviction');
    // A maxmemory, with the container's memory at least a third above it (AOF rewrite fork, client buffers).
    expect(flag('--maxmemory')).toBe('1gb');
    expect(redis?.resources?.limits?.memory).toBe('1536Mi');
    expect(redis?.resources?.requests?.memory).toBe('1536Mi'); // requests = limits: not evicted first under node memory pressure
    expect(flag('--requirepass')).toBe('$(REDIS_PASSWORD)');
    expect(redis?.env?.find((v) => v.name === 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: 'tickwork-secrets', key: 'redis-password' });
  });

  it('runs the apps as a non-root user the kubelet can verify, without privilege escalation', () => {
    for (const name of ['tickwork-scheduler', 'tickwork-worker', 'tickwork-dashboard']) {
      const m = manifest(all, 'Deployment', name);
      const pod = (m.spec?.template as { spec: { securityContext?: { runAsNonRoot?: boolean; runAsUser?: number } } }).spec;
      expect({ name, ...pod.securityContext }).toEqual({ name, runAsNonRoot: true, runAsUser: 1000 });
      for (const c of podSpecOf(m).containers as { securityContext?: { allowPrivilegeEscalation?: boolean } }[]) {
        expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
      }
    }
  });

  it('shows how to point every app at a Redis Cluster: its commented REDIS_CLUSTER_NODES, uncommented, is a cluster each pod reaches with the Secret password', () => {
    const text = readFileSync(join(KUBERNETES_DIR, 'config.yaml'), 'utf8');
    const lines = [...text.matchAll(/^\s*#\s*(REDIS_CLUSTER_NODES:.*)$/gm)].map((m) => m[1] as string);
    expect(lines, 'one commented REDIS_CLUSTER_NODES line in config.yaml').toHaveLength(1);
    const config = parse(text.replace(/^(\s*)#\s*(REDIS_CLUSTER_NODES:.*)$/m, '$1$2')) as Manifest;
    const withCluster = all.map((m) => (m.kind === 'ConfigMap' && m.metadata.name === 'tickwork-config' ? { ...m, ...config, file: m.file } : m));
    for (const name of ['tickwork-scheduler', 'tickwork-worker', 'tickwork-dashboard']) {
      const container = podSpecOf(manifest(withCluster, 'Deployment', name)).containers[0];
      if (!container) throw new Error(`${name} has no container`);
      const env = containerEnv(withCluster, container, TEST_SECRETS);
      const target = redisTargetOf(name, {
        REDIS_URL: redisUrl.parse(env.REDIS_URL),
        REDIS_CLUSTER_NODES: redisClusterNodes.parse(env.REDIS_CLUSTER_NODES),
        QUEUE_PREFIX: env.QUEUE_PREFIX ?? 'tickwork',
      });
      if (typeof target === 'string') throw new Error(`${name}: REDIS_CLUSTER_NODES did not make a cluster target`);
      expect(target.nodes.length, name).toBeGreaterThanOrEqual(3);
      expect(new URL(target.url).password, name).toBe(TEST_SECRETS['tickwork-secrets']?.['redis-password']);
    }
  });
});
