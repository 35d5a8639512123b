import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { appEntry, freePort, startApp, waitFor } from '@tickwork/testkit';

/** The targets of issue 12 for every paginated dashboard surface: each page < 200 ms, the dashboard < 200 MiB. */
export const PAGE_MS = 200;
export const RSS_MIB = 200;

export interface PageResult {
  label: string;
  worst: number;
  median: number;
  bytes: number;
}

const out = (s: string) => process.stdout.write(s);

const PASSWORD = 'bench-password';

export interface BenchDashboard {
  base: string;
  /** The admin's Basic credentials. */
  headers: Record<string, string>;
  pid: number;
  stop(): Promise<unknown>;
}

/**
 * The real dashboard process against `redisUrl` (prefix `tw`) on a free port, once its /healthz answers;
 * `env` adds to its environment (a JOBS_MODULE).
 */
export async function startBenchDashboard(redisUrl: string, env: Record<string, string> = {}): Promise<BenchDashboard> {
  const port = await freePort();
  const app = startApp(appEntry('dashboard'), { REDIS_URL: redisUrl, QUEUE_PREFIX: 'tw', PORT: String(port), DASHBOARD_PASSWORD: PASSWORD, LOG_LEVEL: 'warn', ...env });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.ok, { what: 'dashboard /healthz', timeoutMs: 30_000 });
  } catch (err) {
    await app.stop();
    throw err;
  }
  const headers = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };
  return { base, headers, pid: app.proc.pid ?? 0, stop: () => app.stop() };
}

/**
 * One untimed pass over every request warms the dashboard up (a dashboard in use is warm); then each runs
 * `rounds` times and the slowest counts. A non-200 answer stops the bench: a fast error page is no result.
 */
export async function timePages(base: string, headers: Record<string, string>, requests: readonly [string, string][], rounds: number): Promise<PageResult[]> {
  for (const [, path] of requests) await (await fetch(`${base}${path}`, { headers })).arrayBuffer();
  const results: PageResult[] = [];
  for (const [label, path] of requests) {
    const times: number[] = [];
    let bytes = 0;
    for (let r = 0; r < rounds; r++) {
      const t = performance.now();
      const res = await fetch(`${base}${path}`, { headers });
      const body = await res.arrayBuffer();
      times.push(performance.now() - t);
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${Buffer.from(body).toString('utf8').slice(0, 300)}`);
      bytes = body.byteLength;
    }
    times.sort((a, b) => a - b);
    results.push({ label, worst: times.at(-1) ?? NaN, median: times[Math.floor(times.length / 2)] ?? NaN, bytes });
  }
  return results;
}

/** RSS and peak RSS of a process, MiB (VmRSS, VmHWM in /proc/<pid>/status). */
export function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`)) ?? '';
  return Number(/(\d+) kB/.exec(line)?.[1] ?? NaN) / 1024;
}

/** The table, the dashboard's memory, and MET / NOT MET for both targets. */
/** `targets`: print issue 12's targets (every page < 200 ms, the dashboard's RSS) for these pages. */
export function reportPages(results: readonly PageResult[], pid: number, what: string, targets = true): void {
  const rss = procStatus(pid, 'VmRSS');
  const peak = procStatus(pid, 'VmHWM');
  out(`\n${'request'.padEnd(44)} ${'median ms'.padStart(10)} ${'worst ms'.padStart(10)} ${'bytes'.padStart(10)}\n`);
  for (const r of results) out(`${r.label.padEnd(44)} ${r.median.toFixed(1).padStart(10)} ${r.worst.toFixed(1).padStart(10)} ${String(r.bytes).padStart(10)}\n`);
  const slowest = Math.max(...results.map((r) => r.worst));
  out(`\ndashboard RSS ${rss.toFixed(1)} MiB now, ${peak.toFixed(1)} MiB peak\n`);
  if (!targets) return;
  out(`target: every page < ${PAGE_MS} ms with ${what} (slowest ${slowest.toFixed(1)} ms): ${slowest < PAGE_MS ? 'MET' : 'NOT MET'}\n`);
  out(`target: dashboard < ${RSS_MIB} MiB RSS (peak ${peak.toFixed(1)} MiB): ${peak < RSS_MIB ? 'MET' : 'NOT MET'}\n`);
}
