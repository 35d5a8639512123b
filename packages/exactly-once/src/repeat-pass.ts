/** A background pass repeated on a timer (the ledger's compactor, the PostgreSQL steps' pruner). */
export interface RepeatedPass {
  /** Whether stop() was called: a long pass checks it between its chunks. */
  isStopped(): boolean;
  /** Stops: wakes a loop waiting for its next pass, and resolves once the pass in flight has ended. */
  stop(): Promise<void>;
}

/** Runs `pass` now, then `intervalMs` after each pass ends, until stop(). `pass` handles its own errors. */
export function repeatPass(intervalMs: number, pass: () => Promise<void>): RepeatedPass {
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      await pass();
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    isStopped: () => stopped,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
