/**
 * What `pnpm bench:recovery` knows of its runs, read from the lines the catalog's job writes (catalog.ts):
 * which process holds each run (the last to start its handler), each step's effects (a step seen twice is a
 * doubled effect), and, for each kill, the runs the killed process held and when each next had an effect.
 */
import type { Redis } from 'ioredis';
import { DONE_STEP, RK_KEYS } from './catalog.js';

/** One run the killed process held at its kill. */
export interface Sample {
  kill: number;
  run: string;
  victim: number;
  killedAt: number;
  /** Kill to the run's next effect by another process, ms. */
  resumedMs?: number;
  /** The run ended failed instead (stalled past WORKER_MAX_STALLED_COUNT: dead-lettered). */
  deadLettered?: boolean;
  /** The run's last step had committed by the killed process just before the kill (read after it): nothing was left to resume. */
  moot?: boolean;
}

export class RunBook {
  /** Run → pid of the last delivery that started its handler. */
  private readonly holder = new Map<string, number>();
  readonly done = new Set<string>();
  /** `<run>|<step>` → how many times its effect was committed. */
  private readonly effectCount = new Map<string, number>();
  /** Run → job id, for the check that a run ended failed. */
  readonly jobOf = new Map<string, string>();
  readonly samples: Sample[] = [];
  private startsRead = 0;
  private effectsRead = 0;

  constructor(private readonly redis: Redis) {}

  private polling: Promise<void> = Promise.resolve();

  /** Reads the lines written since the last poll; one read at a time, or two would count the same lines. */
  poll(): Promise<void> {
    this.polling = this.polling.then(() => this.read());
    return this.polling;
  }

  private async read(): Promise<void> {
    const [starts, effects] = await Promise.all([
      this.redis.lrange(RK_KEYS.starts, this.startsRead, -1),
      this.redis.lrange(RK_KEYS.effects, this.effectsRead, -1),
    ]);
    this.startsRead += starts.length;
    this.effectsRead += effects.length;
    for (const line of starts) {
      const [run, pid] = line.split('|');
      if (run && pid) this.holder.set(run, Number(pid));
    }
    for (const line of effects) {
      const [run, step, pid, at] = line.split('|');
      if (!run || !step) continue;
      const key = `${run}|${step}`;
      this.effectCount.set(key, (this.effectCount.get(key) ?? 0) + 1);
      if (step === DONE_STEP) this.done.add(run);
      for (const s of this.pending()) {
        // The victim's own effect committed just before it died is not a resume.
        if (s.run !== run) continue;
        if (Number(pid) !== s.victim && Number(at) >= s.killedAt) s.resumedMs = Number(at) - s.killedAt;
        else if (Number(pid) === s.victim && step === DONE_STEP) s.moot = true;
      }
    }
  }

  /** The unfinished runs `pid` holds. */
  heldBy(pid: number): string[] {
    const runs: string[] = [];
    for (const [run, p] of this.holder) if (p === pid && !this.done.has(run)) runs.push(run);
    return runs;
  }

  /** Whether `pid` holds a run that is still waiting to resume after an earlier kill (it took it, no effect yet). */
  holdsRecovering(pid: number): boolean {
    return this.pending().some((s) => this.holder.get(s.run) === pid);
  }

  pending(): Sample[] {
    return this.samples.filter((s) => s.resumedMs === undefined && !s.deadLettered && !s.moot);
  }

  /** Effects committed more than once for one step of one run. */
  doubled(): string[] {
    return [...this.effectCount].filter(([, n]) => n > 1).map(([k, n]) => `${k} x${n}`);
  }

  /** Runs done whose steps are not all there once (a lost effect). */
  incomplete(steps: number): string[] {
    return [...this.done].filter((run) => Array.from({ length: steps }, (_, i) => this.effectCount.get(`${run}|${i}`)).some((n) => n !== 1));
  }
}
