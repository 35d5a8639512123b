/**
 * `pnpm test:compose`: builds the images and runs the compose stacks for real, one after the other, each with
 * the same checks (compose-stack.ts):
 * - default: docker-compose.yml (one Redis), three workers;
 * - cluster: docker-compose.yml + docker-compose.cluster.yml (a 6-node Redis Cluster), two workers, plus a
 *   check of the cluster's shape. Its images come from the build cache the default stack filled.
 * Uses the machine's Docker when `docker info` works, else the private engine of ../shared/docker-sandbox.
 * Always tears each stack down (`down -v`). COMPOSE_TEST_STACKS=default|cluster runs one of them.
 * Last line: `compose: N passed, M failed`.
 */
import { check, pickEngine, say, summary, type Engine } from './compose-engine.js';
import { stackRunner, type StackSpec } from './compose-stack.js';
import { waitFor } from './wait-for.js';

const NODES = ['redis', 'redis-2', 'redis-3', 'redis-4', 'redis-5', 'redis-6'];

const STACKS: StackSpec[] = [
  {
    label: '',
    files: ['docker-compose.yml'],
    workers: 3,
    healthy: { redis: 1, scheduler: 1, dashboard: 1 },
    completed: [],
    redisCli: ['redis-cli'],
  },
  {
    label: 'cluster',
    files: ['docker-compose.yml', 'docker-compose.cluster.yml'],
    workers: 2,
    healthy: { ...Object.fromEntries(NODES.map((n) => [n, 1])), scheduler: 1, dashboard: 1 },
    completed: ['redis-cluster-init'],
    redisCli: ['redis-cli', '-c'],
    extra: async ({ name, composeOk, docker, containers, logsOf }) => {
      await check(name('the cluster has 3 masters serving every slot, each with a connected replica'), async () => {
        const out = await composeOk(['exec', '-T', 'redis', 'redis-cli', 'cluster', 'nodes']);
        // <id> <ip:port@cport,hostname> <flags> <master id> <ping> <pong> <epoch> <link> <slots...>
        const rows = out.trim().split('\n').map((l) => l.trim().split(/\s+/));
        const masters = rows.filter((r) => r[2]?.split(',').includes('master') && r.length > 8);
        const replicas = rows.filter((r) => r[2]?.split(',').includes('slave') && r[7] === 'connected');
        const names = rows.map((r) => r[1]?.split(',')[1]).sort();
        if (masters.length !== 3 || replicas.length !== 3) throw new Error(`expected 3 masters with slots and 3 connected replicas:\n${out}`);
        if (names.join(' ') !== [...NODES].sort().join(' ')) throw new Error(`nodes announce ${names.join(', ')}, expected ${NODES.join(', ')}`);
        return `masters ${masters.map((r) => r[1]?.split(',')[1]).join(', ')}`;
      });
      // What a later `up` does: the init finds the cluster in place, re-introduces the nodes, and exits 0.
      await check(name('redis-cluster-init run again on the existing cluster re-introduces the nodes and exits 0'), async () => {
        const [id] = await containers('redis-cluster-init', true); // exited: it is a one-shot service
        if (!id) throw new Error('no redis-cluster-init container');
        const ready = async () => (await logsOf(id)).split('\n').filter((l) => l.includes('redis-cluster-init: cluster ready')).length;
        const before = await ready();
        await composeOk(['start', 'redis-cluster-init']);
        await waitFor(async () => (await ready()) > before, { timeoutMs: 60_000, intervalMs: 1000, what: 'a second "cluster ready" from redis-cluster-init' });
        const logs = await logsOf(id);
        if (!logs.includes('the cluster exists; re-introducing the nodes')) throw new Error(`the init did not take the existing cluster:\n${logs.slice(-2000)}`);
        let state = '';
        await waitFor(
          async () => {
            state = (await docker(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', id])).stdout.trim();
            return state === 'exited 0';
          },
          { timeoutMs: 30_000, intervalMs: 500, what: 'redis-cluster-init to exit 0' },
        ).catch((err: unknown) => {
          throw new Error(`${(err as Error).message}; last state: ${state}`);
        });
      });
    },
  },
];

async function main(): Promise<void> {
  let engine: Engine;
  try {
    engine = await pickEngine();
  } catch (err) {
    await check('a Docker engine is available', () => Promise.reject(err));
    return;
  }
  say(`engine: ${engine.what}`);
  const wanted = process.env.COMPOSE_TEST_STACKS?.split(',').map((s) => s.trim());
  const stacks = STACKS.filter((s) => !wanted || wanted.includes(s.label || 'default'));
  if (stacks.length === 0) throw new Error(`COMPOSE_TEST_STACKS=${process.env.COMPOSE_TEST_STACKS}: use default, cluster or both (comma-separated)`);

  for (const spec of stacks) {
    const stack = stackRunner(engine, spec);
    const interrupted = (signal: NodeJS.Signals) => {
      say(`${signal}: stopping`);
      void stack.down().finally(() => {
        summary();
        process.exit(130);
      });
    };
    process.once('SIGINT', interrupted);
    process.once('SIGTERM', interrupted);
    try {
      await stack.test();
    } finally {
      await stack.down();
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
    }
  }
}

main()
  .catch(async (err: unknown) => {
    process.stderr.write(`compose: crashed: ${(err as Error).stack ?? String(err)}\n`);
    await check('the compose test itself ran to the end', () => Promise.reject(err));
  })
  .finally(() => process.exit(summary()));
