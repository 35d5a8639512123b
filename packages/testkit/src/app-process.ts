import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './wait-for.js';

export interface AppProcess {
  readonly proc: ChildProcess;
  /** Every line the process wrote to stdout and stderr so far. */
  readonly lines: string[];
  /** Parsed pino JSON lines. */
  logs(): Record<string, unknown>[];
  /** Waits for a log line matching `predicate`, up to `timeoutMs` (default 60 s). */
  waitForLog(predicate: (entry: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

const LIVE = Symbol.for('tickwork.testkit.liveApps');

/**
 * The app processes started in this process and not exited yet: the tests' setup kills those a test file
 * left running (vitest-setup.ts), a test that failed midway before stopping its own, say.
 */
export function liveApps(): Set<ChildProcess> {
  const g = globalThis as typeof globalThis & { [LIVE]?: Set<ChildProcess> };
  return (g[LIVE] ??= new Set());
}

/** Runs a built app (`node <entry>`) as a real child process and captures its log lines. `cwd`: its working directory (default ours). */
export function startApp(entry: string, env: Record<string, string>, args: string[] = [], opts: { cwd?: string } = {}): AppProcess {
  const proc = spawn(process.execPath, [entry, ...args], {
    ...(opts.cwd !== undefined && { cwd: opts.cwd }),
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(line);
  };
  proc.stdout?.on('data', collect);
  proc.stderr?.on('data', collect);
  const live = liveApps();
  live.add(proc);
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      live.delete(proc);
      resolve(code);
    }),
  );
  const logs = () =>
    lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return {
    proc,
    lines,
    logs,
    exited,
    // 60 s: an app starting on a 2-core machine under heavy load (CI runs the compose stacks beside the
    // tests; a CPU burner beside both) has taken more than 30 s to log its first line. A wait, not a measure.
    waitForLog: (predicate, what, timeoutMs = 60_000) =>
      waitFor(() => logs().find(predicate), { timeoutMs, what: `${what}; output so far:\n${lines.slice(-20).join('\n')}` }),
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}
