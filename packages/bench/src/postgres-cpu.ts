import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds the machine's PostgreSQL processes have used so far (user + system, with what its exited
 * backends used, which the postmaster keeps as its children's time), read from Linux's /proc; undefined
 * where there is no /proc to read. Only meaningful when the PostgreSQL the bench talks to runs on this
 * machine (pgboss.ts asks only then), and it counts the whole server: anything else PostgreSQL does during
 * a round is in it too.
 */
export function postgresCpu(): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  let ticks = 0;
  let found = false;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone since the listing
    }
    // "pid (comm) state ppid ... utime stime cutime cstime ..." (proc(5)); comm may hold spaces and ')'.
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    const fields = stat.slice(close + 2).split(' ');
    found = true;
    for (const i of [11, 12, 13, 14]) ticks += Number(fields[i] ?? 0);
  }
  // Linux reports these in clock ticks of USER_HZ, 100 per second on every architecture Node runs on.
  return found ? ticks / 100 : undefined;
}
