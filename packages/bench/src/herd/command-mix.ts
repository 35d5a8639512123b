/**
 * `BENCH_HERD_MIX=1`: where a side's Redis commands go. A MONITOR connection watches the herd and counts
 * each command by its shape (the command, and for a script its first key with ids and numbers taken out),
 * so a script's calls can be told from another's without knowing their SHAs. MONITOR costs Redis time of
 * its own: the side's lag and CPU figures are not comparable with a run without it.
 */
import { Redis } from 'ioredis';

export interface CommandMix {
  stop(): Promise<Map<string, number>>;
}

/** Numbers, UUID-like and long hex parts of a key become `#`: what is left names the key's kind. */
export function keyShape(key: string): string {
  return key.replace(/[0-9a-f]{8,}/gi, '#').replace(/\d+/g, '#');
}

export async function watchCommandMix(url: string): Promise<CommandMix> {
  const redis = new Redis(url, { lazyConnect: true });
  await redis.connect();
  const monitor = await redis.monitor();
  const counts = new Map<string, number>();
  monitor.on('monitor', (_time: string, args: string[]) => {
    const cmd = (args[0] ?? '?').toLowerCase();
    const shape = cmd === 'evalsha' || cmd === 'eval' ? `${cmd} ${keyShape(args[3] ?? '')} (${args[2] ?? '?'} keys)` : `${cmd} ${keyShape(args[1] ?? '')}`;
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
