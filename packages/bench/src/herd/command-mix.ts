/**
 * `BENCH_HERD_MIX=1`: where a side's Redis commands go. A MONITOR connection watches the herd and counts
 * each command by its shape (the command, and for a script its first key with ids and numbers taken out),
 * so a script's calls can be told from another's without knowing their SHAs. MONITOR costs Redis time of
 * its own: the side's lag and CPU figures are not comparable with a run without it.
 * `BENCH_HERD_SLOWLOG=1`: Redis's time per command shape, from SLOWLOG with every command logged (its own
 * cost is small, but the log is read whole at the end: keep N at a few thousand).
 */
import { Redis } from 'ioredis';

export interface CommandMix {
  stop(): Promise<Map<string, number>>;
}

/** Numbers, UUID-like and long hex parts of a key become `#`: what is left names the key's kind. */
export function keyShape(key: string): string {
  return key.replace(/[0-9a-f]{8,}/gi, '#').replace(/\d+/g, '#');
}

/** More keys than this in one script call: a batch (the history's, the scheduler's commits), counted as one shape. */
const BATCH_KEYS = 16;

/** A command's shape: its name and, for a script, its first key's shape and key count; else its key's shape. */
function commandShape(args: readonly string[]): string {
  const cmd = (args[0] ?? '?').toLowerCase();
  if (cmd !== 'evalsha' && cmd !== 'eval') return `${cmd} ${keyShape(args[1] ?? '')}`;
  // A script by its first key and key count; a batch of many entries (its key count varies) as one shape.
  const keys = Number(args[2]);
  return `${cmd} ${keyShape(args[3] ?? '')} (${keys > BATCH_KEYS ? `batch of more than ${BATCH_KEYS}` : (args[2] ?? '?')} keys)`;
}


export async function watchCommandMix(url: string): Promise<CommandMix> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  const monitor = await redis.monitor();
  const counts = new Map<string, number>();
  monitor.on('monitor', (_time: string, args: string[]) => {
    const shape = commandShape(args);
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  });
  return {
    async stop() {
      monitor.disconnect();
      redis.disconnect();
      return counts;
    },
  };
}

/** The top shapes, per occurrence. */
export function mixLines(counts: Map<string, number>, n: number, top = Number(process.env.BENCH_HERD_MIX_TOP ?? 30)): string[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([shape, c]) => `    ${(c / n).toFixed(2).padStart(7)}  ${shape}`);
}

/** Redis's own time per command (INFO commandstats): calls and µs, scripts' inner commands counted under theirs too. */
export type CommandStats = Map<string, { calls: number; usec: number }>;

export async function commandStats(redis: Pick<Redis, 'info'>): Promise<CommandStats> {
  const stats: CommandStats = new Map();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(m[1] ?? '?', { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return stats;
}

/**
 * The commands Redis spent most time on between two looks, per occurrence: µs and calls. EVALSHA's time
 * holds its scripts' commands, which are also counted under their own names.
 */
export function statLines(before: CommandStats, after: CommandStats, n: number, top = 12): string[] {
  return [...after]
    .map(([cmd, a]) => {
      const b = before.get(cmd) ?? { calls: 0, usec: 0 };
      return { cmd, calls: a.calls - b.calls, usec: a.usec - b.usec };
    })
    .filter((d) => d.calls > 0)
    .sort((x, y) => y.usec - x.usec)
    .slice(0, top)
    .map((d) => `    ${(d.usec / n).toFixed(1).padStart(7)} µs ${(d.calls / n).toFixed(2).padStart(6)} calls  ${d.cmd}`);
}

/** Logs every command from now on (SLOWLOG, threshold 0), for slowlogLines. */
export async function startSlowlog(redis: Pick<Redis, 'config' | 'slowlog'>): Promise<void> {
  await redis.config('SET', 'slowlog-max-len', '2000000');
  await redis.slowlog('RESET');
  await redis.config('SET', 'slowlog-log-slower-than', '0');
}

/** Redis's time per command shape (as mix shapes: a script by its first key) per occurrence, most first. */
export async function slowlogLines(redis: Pick<Redis, 'config' | 'slowlog'>, n: number, top = 15): Promise<string[]> {
  await redis.config('SET', 'slowlog-log-slower-than', '10000');
  const entries = (await redis.slowlog('GET', -1)) as [number, number, number, string[]][];
  const by = new Map<string, { calls: number; usec: number }>();
  for (const [, , usec, args] of entries) {
    const shape = commandShape(args);
    const d = by.get(shape) ?? { calls: 0, usec: 0 };
    d.calls++;
    d.usec += usec;
    by.set(shape, d);
  }
  return [...by]
    .sort((a, b) => b[1].usec - a[1].usec)
    .slice(0, top)
    .map(([shape, d]) => `    ${(d.usec / n).toFixed(1).padStart(7)} µs ${(d.calls / n).toFixed(2).padStart(6)} calls ${(d.usec / d.calls).toFixed(0).padStart(5)} µs/call  ${shape}`);
}
