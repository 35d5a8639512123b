/**
 * Shape of docker-compose.yml and the Dockerfile: the properties tickwork relies on in production that
 * a careless edit could drop silently (compose would still start). `pnpm test:compose` runs the stack.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dependsOn, readComposeFile, type Service } from './compose-files.js';
import { REPO_ROOT as root } from './paths.js';

const compose = readComposeFile('docker-compose.yml');
const apps = ['scheduler', 'worker', 'dashboard'] as const;

function service(name: string): Service {
  const svc = compose.services[name];
  if (!svc) throw new Error(`docker-compose.yml has no service "${name}"`);
  return svc;
}

/** Compose duration ("35s", "1m30s", "1500ms") in milliseconds. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a compose duration: "${text}"`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * (units[p[2] ?? ''] ?? NaN), 0);
}

/** Container ports a service publishes, from short ("8080:3000", "${X:-3000}:3000") or long syntax. */
function containerPorts(svc: Service): number[] {
  return (svc.ports ?? []).map((p) => (typeof p === 'string' ? Number(p.split(':').at(-1)?.split('/')[0]) : Number(p.target)));
}

/** Runs a healthcheck's argv (its port moved to a free one) against a server answering 200, then 503. */
async function runHealthcheck(argv: string[], port: string): Promise<{ status: { ok: number | string; notReady: number | string }; paths: string[] }> {
  const paths: string[] = [];
  let answer = 200;
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(answer).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const free = String((server.address() as AddressInfo).port);
  const moved = argv.map((arg) => arg.replace(`/dev/tcp/127.0.0.1/${port}`, `/dev/tcp/127.0.0.1/${free}`));
  const run = () =>
    new Promise<number | string>((resolve, reject) => {
      const [file, ...args] = moved;
      if (file === undefined) return reject(new Error('empty healthcheck'));
      // 40 s: in CI, beside the type checks and the compose test's image build, a run of it has taken over 10 s.
      execFile(file, args, { timeout: 40_000 }, (err) => resolve(err ? (typeof err.code === 'number' ? err.code : `killed by ${err.signal}`) : 0));
    });
  try {
    const ok = await run();
    answer = 503;
    const notReady = await run();
    return { status: { ok, notReady }, paths };
  } finally {
    server.close();
  }
}

describe('docker-compose.yml', () => {
  it('has redis, scheduler, worker and dashboard', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['dashboard', 'redis', 'scheduler', 'worker']);
  });

  it('runs Redis 7 (Debian) with AOF, a maxmemory, noeviction and hz 100, data on a named volume', () => {
    const redis = service('redis');
    expect(redis.image).toBe('redis:7-bookworm');
    const args = (redis.command ?? []).join(' ');
    expect(args).toMatch(/--appendonly yes\b/);
    expect(args).toMatch(/--maxmemory-policy noeviction\b/);
    expect(args).toMatch(/--maxmemory \$\{REDIS_MAXMEMORY:-1gb\}( |$)/); // a limit, overridable, never unset
    expect(args).toMatch(/--hz 100\b/);
    const volume = (redis.volumes ?? []).find((v) => v.split(':')[1] === '/data');
    expect(volume, 'redis mounts a volume on /data').toBeDefined();
    expect(Object.keys(compose.volumes ?? {})).toContain(volume?.split(':')[0]);
  });

  it('health-checks Redis with redis-cli ping', () => {
    expect(service('redis').healthcheck?.test?.join(' ')).toMatch(/redis-cli ping/);
  });

  it.each(apps)('builds %s as the one image of every app: the root Dockerfile, no build args', (name) => {
    // The same build for every app: the 2nd and 3rd builds of `up --build` are cache hits.
    expect(service(name).build).toEqual({ context: '.' });
    // No image name: compose tags each service's build after the project, which is what compose-stack.ts
    // untags after a run (the three tags are one image).
    expect(service(name).image).toBeUndefined();
  });

  it.each(apps)('picks %s by the command: node on its compiled main, no shell, so signals reach node', (name) => {
    expect(service(name).command).toEqual(['node', `apps/${name}/dist/main.js`]);
    // tsc compiles apps/<app>/src to apps/<app>/dist (rootDir src, outDir dist).
    expect(existsSync(join(root, 'apps', name, 'src', 'main.ts')), `apps/${name}/src/main.ts`).toBe(true);
  });

  it.each(apps)('starts %s only once Redis is healthy', (name) => {
    expect(dependsOn(service(name)).redis?.condition).toBe('service_healthy');
  });

  it.each(apps)('health-checks %s on /readyz of its PORT, restarts it and runs it under an init', async (name) => {
    const svc = service(name);
    const port = svc.environment?.PORT;
    expect(port, `${name} sets PORT`).toMatch(/^\d+$/);
    const [kind, ...argv] = svc.healthcheck?.test ?? [];
    expect(kind).toBe('CMD');
    expect(argv.join(' ')).toContain(`/dev/tcp/127.0.0.1/${port} `);
    // Run the check itself (bash is on the host as in the image) against a server on a free port: it passes
    // on 200 and fails on /readyz's 503, and it asks /readyz, not /healthz.
    const { status, paths } = await runHealthcheck(argv, String(port));
    expect(status).toEqual({ ok: 0, notReady: 1 });
    expect(paths).toEqual(['/readyz', '/readyz']);
    expect(svc.restart).toBe('unless-stopped');
    expect(svc.init).toBe(true);
  }, 120_000);

  it('lets the worker scale: replicas, no container_name, no host port', () => {
    const worker = service('worker');
    expect(worker.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
  });

  it('gives the worker a stop grace period longer than its drain timeout and its own exit deadline', () => {
    const worker = service('worker');
    const drainMs = Number(worker.environment?.DRAIN_TIMEOUT_MS);
    expect(drainMs, 'DRAIN_TIMEOUT_MS is set explicitly').toBeGreaterThan(0);
    // apps/worker/src/main.ts: after a drain that timed out, the worker exits on its own within 10 s more.
    expect(durationMs(worker.stop_grace_period ?? '10s')).toBeGreaterThan(drainMs + 10_000);
  });

  it('publishes the dashboard on container port 3000 with a host port that can be overridden', () => {
    const dashboard = service('dashboard');
    expect(dashboard.environment?.PORT).toBe('3000');
    expect(containerPorts(dashboard)).toEqual([3000]);
    expect(dashboard.ports?.[0]).toMatch(/^\$\{DASHBOARD_HOST_PORT:-3000\}:3000$/);
  });

  it('requires DASHBOARD_PASSWORD instead of shipping a default one', () => {
    expect(service('dashboard').environment?.DASHBOARD_PASSWORD).toMatch(/^\$\{DASHBOARD_PASSWORD:\?.+\}$/);
  });

  it('publishes no port but the dashboard', () => {
    for (const name of ['redis', 'scheduler', 'worker']) expect(service(name).ports, name).toBeUndefined();
  });
});

describe('durationMs', () => {
  it('reads compose durations', () => {
    expect(durationMs('35s')).toBe(35_000);
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1500ms')).toBe(1500);
  });

  it('rejects what compose would not read', () => {
    expect(() => durationMs('35')).toThrow(/not a compose duration/);
    expect(() => durationMs('35 s')).toThrow(/not a compose duration/);
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

  it('uses only the Debian slim Node 20 base image', () => {
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    const stages = new Set([...dockerfile.matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((m) => m[1]));
    const external = bases.filter((b) => !stages.has(b));
    expect(new Set(external)).toEqual(new Set(['node:20-bookworm-slim']));
    expect(dockerfile).not.toMatch(/\bapk\b|alpine/i);
  });

  it('needs no BuildKit: no RUN --mount and no heredocs', () => {
    expect(dockerfile).not.toMatch(/^RUN\s+--mount/m);
    expect(dockerfile).not.toMatch(/^(RUN|COPY)\b.*<<-?\s*['"]?\w+/m);
  });

  it('runs as the non-root node user', () => {
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe('node');
  });

  it('builds one image for every app and the CLI: one prune, one build, no APP build arg', () => {
    expect(dockerfile).not.toMatch(/^ARG\b/m);
    const prunes = [...dockerfile.matchAll(/\bturbo prune\s+([^\n]*?)\s+--docker\b/g)].map((m) => m[1]?.split(/\s+/).sort());
    const all = ['@tickwork/cli', ...apps.map((a) => `@tickwork/${a}`)].sort();
    expect(prunes).toEqual([all]);
    const builds = [...dockerfile.matchAll(/\bturbo run build\s+([^\n&]*)/g)].map((m) => [...(m[1] ?? '').matchAll(/--filter=(\S+)/g)].map((f) => f[1]).sort());
    expect(builds).toEqual([all]);
  });

  it('installs from the manifests before it copies the sources, so the install layer survives a source change', () => {
    const install = dockerfile.indexOf('RUN pnpm install --frozen-lockfile\n');
    expect(dockerfile.indexOf('COPY --from=pruner /repo/out/json/ .')).toBeGreaterThan(-1);
    expect(install).toBeGreaterThan(dockerfile.indexOf('COPY --from=pruner /repo/out/json/ .'));
    expect(dockerfile.indexOf('COPY --from=pruner /repo/out/full/ .')).toBeGreaterThan(install);
  });

  it('starts no app by default: the container\'s command names one', () => {
    const cmd = /^CMD\s+(.*)$/m.exec(dockerfile)?.[1] ?? '';
    expect(cmd).toMatch(/exit [1-9]/);
    for (const name of apps) expect(cmd).toContain(`node apps/${name}/dist/main.js`);
  });
});
