/**
 * `tickwork keda` (`pnpm gen:keda`) as a real CLI process: the worker's KEDA triggers follow the catalog,
 * and deploy/kubernetes holds exactly what it makes for the job catalog, so a job on a new queue cannot
 * ship without its trigger (the worker's deploy-manifests.test.ts checks the triggers against the catalog too).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { catalog } from '@tickwork/jobs';
import { fixtureModule, REPO_ROOT } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { KEDA_FILE } from './commands/keda.js';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));

async function keda(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'keda', ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const listNames = (yaml: string) => [...yaml.matchAll(/listName: "([^"]+)"/g)].map((m) => m[1]);

describe('tickwork keda', { timeout: 60_000 }, () => {
  it('makes what deploy/kubernetes holds for the job catalog: one trigger per queue (run `pnpm gen:keda` when it does not)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tickwork-keda-'));
    try {
      const file = join(dir, 'worker-scaledobject.yaml');
      const r = await keda(['--write', file]);
      expect(r).toMatchObject({ code: 0, stdout: `wrote ${file}: ${catalog.queues.length} trigger(s), for queues ${catalog.queues.join(', ')}\n` });
      const made = await readFile(file, 'utf8');
      expect(listNames(made)).toEqual(catalog.queues.map((q) => `tickwork:${q}:wait`));
      const committed = await readFile(join(REPO_ROOT, KEDA_FILE), 'utf8');
      expect(committed, `${KEDA_FILE} is not what \`pnpm gen:keda\` makes for the job catalog (a queue added or removed?): run \`pnpm gen:keda\` and commit the file`).toBe(made);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("follows the catalog it is given and the queue prefix, and on a Redis Cluster watches each queue's tagged wait list", async () => {
    const env = { JOBS_MODULE: fixtureModule('cluster-chaos-catalog'), QUEUE_PREFIX: 'acme' };
    const one = await keda([], env);
    expect(one.code).toBe(0);
    expect(listNames(one.stdout)).toEqual(['acme:chaos-a:wait', 'acme:chaos-b:wait', 'acme:chaos-c:wait', 'acme:chaos-d:wait']);
    expect(one.stdout).toContain('type: redis\n');
    expect(one.stdout).toContain('address: "tickwork-redis:6379"');

    const cluster = await keda(['--cluster-nodes', 'redis-0.redis:6379,redis-1.redis:6379'], env);
    expect(cluster.code).toBe(0);
    expect(listNames(cluster.stdout)).toEqual(['acme:{chaos-a}:chaos-a:wait', 'acme:{chaos-b}:chaos-b:wait', 'acme:{chaos-c}:chaos-c:wait', 'acme:{chaos-d}:chaos-d:wait']);
    expect(cluster.stdout.match(/type: redis-cluster\n/g)).toHaveLength(4);
    expect(cluster.stdout).toContain('addresses: "redis-0.redis:6379,redis-1.redis:6379"');
  });

  it('answers a bad --address or --cluster-nodes, or both, with usage, exit 2', async () => {
    for (const args of [['--address', 'no-port'], ['--cluster-nodes', 'a:6379,b'], ['--address', 'a:6379', '--cluster-nodes', 'b:6379']]) {
      const r = await keda(args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr).toMatch(/^tickwork keda: .*\nusage: tickwork keda /);
    }
  });
});
