export interface CheckQueueOptions {
  /** Checks of not-yet-trusted logins run at once. scrypt runs on libuv's thread pool; one leaves the other cores to the event loop. */
  concurrency?: number;
  /** Checks waiting at most; past it, the lane with the most waiting gives one up. */
  maxWaiting?: number;
}

/** What a queued check comes to when the queue sheds it instead of running it. */
export const SHED = Symbol('shed');

interface Job {
  run(): void;
  shed(): void;
}

interface Lane {
  jobs: Job[];
  running: number;
  served: number;
}

export interface CheckQueue {
  /**
   * Runs `check` when its turn comes. `lane` is the client's address: lanes take turns, so one address's
   * hundred queued checks delay another's first by one check, not a hundred. A `trusted` check (an
   * address the user logged in from recently) goes before every lane and may use one slot beyond
   * `concurrency`, so an operator's periodic re-check never waits behind a burst.
   */
  run<T>(lane: string, trusted: boolean, check: () => Promise<T>): Promise<T | typeof SHED>;
}

/**
 * The expensive part of a login, the scrypt check (tens of milliseconds of CPU), bounded and queued: a
 * burst of checks takes at most `concurrency` (+1 for trusted logins) of the thread pool's threads, and
 * the queue of those waiting is bounded, the busiest lane shedding first.
 */
export function createCheckQueue(opts: CheckQueueOptions = {}): CheckQueue {
  const concurrency = opts.concurrency ?? 1;
  const maxWaiting = opts.maxWaiting ?? 1000;
  const first: Job[] = [];
  // Per address: its waiting checks, its running ones, and when it was last served (a turn number).
  const lanes = new Map<string, Lane>();
  let turn = 0;
  let waiting = 0;
  let running = 0;

  /** The lane served longest ago (a new one first) among those waiting. */
  const nextLane = (): Lane | undefined => {
    let pick: Lane | undefined;
    for (const lane of lanes.values()) if (lane.jobs.length > 0 && (!pick || lane.served < pick.served)) pick = lane;
    return pick;
  };
  const pump = (): void => {
    for (;;) {
      let job: Job | undefined;
      if (first.length > 0 && running < concurrency + 1) job = first.shift();
      else if (running < concurrency) {
        const lane = nextLane();
        job = lane?.jobs.shift();
        if (lane) lane.served = ++turn;
      }
      if (!job) return;
      waiting -= 1;
      running += 1;
      job.run();
    }
  };
  const release = (name: string | undefined) => {
    running -= 1;
    const lane = name === undefined ? undefined : lanes.get(name);
    if (lane && --lane.running === 0 && lane.jobs.length === 0) lanes.delete(name as string);
    pump();
  };
  /** Sheds the newest check of the lane with the most waiting if it has more than `name` would; false: shed the newcomer. */
  const shedForNewcomer = (name: string): boolean => {
    let longest: Lane | undefined;
    for (const lane of lanes.values()) if (!longest || lane.jobs.length > longest.jobs.length) longest = lane;
    if (!longest || longest.jobs.length <= (lanes.get(name)?.jobs.length ?? 0) + 1) return false;
    longest.jobs.pop()?.shed();
    waiting -= 1;
    return true;
  };

  return {
    run(name, trusted, check) {
      return new Promise((resolve, reject) => {
        if (!trusted && waiting >= maxWaiting && !shedForNewcomer(name)) return resolve(SHED);
        let lane: Lane | undefined;
        if (!trusted) {
          lane = lanes.get(name) ?? { jobs: [], running: 0, served: -1 };
          lanes.set(name, lane);
        }
        const job: Job = {
          run: () => {
            if (lane) lane.running += 1;
            void check()
              .then(resolve, reject)
              .finally(() => release(lane ? name : undefined));
          },
          shed: () => resolve(SHED),
        };
        if (lane) lane.jobs.push(job);
        else first.push(job);
        waiting += 1;
        pump();
      });
    },
  };
}
