/**
 * Shape of docker-compose.cluster.yml as compose applies it over docker-compose.yml: six Redis Cluster nodes
 * with the single Redis's production settings, a one-shot init, and the apps on REDIS_CLUSTER_NODES. What a
 * careless edit could break while compose still starts; `pnpm test:compose` runs the stack.
 */
import { describe, expect, it } from 'vitest';
import { dependsOn, mergedCompose, readComposeFile, type Service } from './compose-files.js';

const override = readComposeFile('docker-compose.cluster.yml');
const stack = mergedCompose('docker-compose.yml', 'docker-compose.cluster.yml');
const NODES = ['redis', 'redis-2', 'redis-3', 'redis-4', 'redis-5', 'redis-6'];
const apps = ['scheduler', 'worker', 'dashboard'];

function service(name: string): Service {
  const svc = stack.services[name];
  if (!svc) throw new Error(`the cluster stack has no service "${name}"`);
  return svc;
}
const commandOf = (name: string) => (service(name).command ?? []).join(' ');

describe('docker-compose.cluster.yml over docker-compose.yml', () => {
  it('has the six nodes, the init and the same apps', () => {
    expect(Object.keys(stack.services).sort()).toEqual([...apps, ...NODES, 'redis-cluster-init'].sort());
  });

  it('overrides only the apps and the Redis services (the apps stay defined in docker-compose.yml)', () => {
    for (const name of apps) expect(Object.keys(override.services[name] ?? {}).sort(), name).toEqual(['depends_on', 'environment']);
  });

  it.each(NODES)('runs %s as a cluster node with the single Redis settings, announcing its service name', (name) => {
    const svc = service(name);
    expect(svc.image).toBe('redis:7-bookworm');
    const args = commandOf(name);
    expect(args).toMatch(/--cluster-enabled yes\b/);
    // A dead master's slots must not stop the other masters (README, "Failover").
    expect(args).toMatch(/--cluster-require-full-coverage no\b/);
    expect(args).toMatch(/--appendonly yes\b/);
    expect(args).toMatch(/--maxmemory-policy noeviction\b/);
    expect(args).toMatch(/--hz 100\b/);
    expect(args).toMatch(/--cluster-preferred-endpoint-type hostname\b/);
    expect(args).toContain('--maxmemory "$${REDIS_MAXMEMORY}"');
    expect(args).toContain('--cluster-announce-hostname "$${REDIS_NODE_HOST}"');
    expect(svc.environment).toMatchObject({ REDIS_NODE_HOST: name, REDIS_MAXMEMORY: '${REDIS_MAXMEMORY:-1gb}' });
    expect(svc.restart).toBe('unless-stopped');
    expect(svc.ports).toBeUndefined();
  });

  it('gives every node a named volume of its own on /data', () => {
    const sources = NODES.map((name) => (service(name).volumes ?? []).find((v) => v.split(':')[1] === '/data')?.split(':')[0]);
    expect(new Set(sources).size).toBe(NODES.length);
    for (const source of sources) expect(Object.keys(stack.volumes ?? {})).toContain(source);
  });

  it.each(NODES)('health-checks %s on cluster_state:ok, with a start period for the init to run in', (name) => {
    const health = service(name).healthcheck;
    expect(health?.test?.join(' ')).toMatch(/redis-cli cluster info \| grep -q cluster_state:ok/);
    expect(health?.start_period).toBeDefined();
  });

  it('creates the cluster once with one replica per master, over every node, and runs only once per up', () => {
    const init = service('redis-cluster-init');
    expect(init.restart).toBe('no');
    expect(init.environment?.NODES?.split(' ')).toEqual(NODES);
    expect(Object.keys(dependsOn(init)).sort()).toEqual([...NODES].sort());
    const script = commandOf('redis-cluster-init');
    expect(script).toMatch(/redis-cli --cluster create \$\$addrs --cluster-replicas 1 --cluster-yes/);
    // Idempotent: an existing cluster (every slot assigned) is re-introduced, not created again.
    expect(script).toMatch(/cluster_slots_assigned:16384/);
    expect(script).toMatch(/cluster meet/);
    // Done only when every node is ok and every replica is linked, not at the first cluster_state:ok.
    expect(script).toMatch(/master_link_status:up/);
  });

  it.each(apps)('points %s at every node and starts it only after the init succeeded and redis is healthy', (name) => {
    const svc = service(name);
    const seeds = svc.environment?.REDIS_CLUSTER_NODES?.split(',');
    expect(seeds).toEqual(NODES.map((n) => `${n}:6379`));
    expect(dependsOn(svc)['redis-cluster-init']?.condition).toBe('service_completed_successfully');
    expect(dependsOn(svc).redis?.condition).toBe('service_healthy');
  });

  it('publishes no port but the dashboard', () => {
    const publishing = Object.entries(stack.services).filter(([, svc]) => svc.ports !== undefined).map(([name]) => name);
    expect(publishing).toEqual(['dashboard']);
  });
});
