/**
 * MONITOR on a plain socket, for tests that assert which commands reached a server and in what order.
 *
 * Why not ioredis' `monitor()`: it marks the connection as monitoring in a promise callback after MONITOR's
 * +OK, so a command line that arrives in the same read as the +OK is taken for a reply to a command never
 * sent, and monitor() rejects with "Command queue state error" (seen in CI on a busy cluster node; also
 * taskforcesh/bullmq#2505). Here every line after the +OK is a command line, whatever read it came in.
 */
import { connect } from 'node:net';

export interface MonitoredCommand {
  /** The server's timestamp, as printed (`seconds.micros`). */
  time: string;
  db: number;
  /** `host:port` of the client that sent it, `lua` for a command a script ran, `unix:<path>` over a socket. */
  source: string;
  /** The command and its arguments, unescaped. */
  args: string[];
}

export interface RedisMonitor {
  /** Closes the socket; lines still in flight are dropped. */
  stop(): void;
}

/** Starts MONITOR on `port` and resolves once the server has said +OK: every command after that is seen. */
export async function monitorRedis(
  target: { port: number; host?: string; password?: string },
  onCommand: (command: MonitoredCommand) => void,
): Promise<RedisMonitor> {
  const socket = connect(target.port, target.host ?? '127.0.0.1');
  const auth = target.password === undefined ? [] : [['AUTH', target.password]];
  let pendingOks = auth.length + 1;
  let buffered = '';
  return new Promise<RedisMonitor>((resolve, reject) => {
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      for (const command of [...auth, ['MONITOR']]) socket.write(encode(command));
    });
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1'); // byte for byte: \xHH escapes are decoded per argument below
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (pendingOks > 0) {
          if (line !== '+OK') return fail(new Error(`MONITOR on port ${target.port} was refused: ${line}`));
          if (--pendingOks === 0) {
            socket.off('error', fail);
            socket.on('error', () => {}); // a server killed by the test ends the monitor, not the test
            resolve({ stop: () => socket.destroy() });
          }
          continue;
        }
        const command = parseMonitorLine(line);
        if (command) onCommand(command);
      }
    });
  });
}

function encode(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

/** `+1796408664.225027 [0 127.0.0.1:49632] "cluster" "INFO"` (arguments escaped as sdscatrepr does). */
export function parseMonitorLine(line: string): MonitoredCommand | undefined {
  const head = /^\+(\S+) \[(\d+) ([^\]]+)\] /.exec(line);
  if (!head) return undefined;
  const args: string[] = [];
  const rest = line.slice(head[0].length);
  let i = 0;
  while (i < rest.length) {
    if (rest[i] === ' ') {
      i++;
      continue;
    }
    if (rest[i] !== '"') return undefined;
    const bytes: number[] = [];
    i++;
    while (i < rest.length && rest[i] !== '"') {
      const c = rest.charCodeAt(i);
      if (rest[i] !== '\\') {
        bytes.push(c);
        i++;
        continue;
      }
      const e = rest[i + 1];
      if (e === 'x') {
        bytes.push(parseInt(rest.slice(i + 2, i + 4), 16));
        i += 4;
        continue;
      }
      bytes.push((ESCAPES[e ?? ''] ?? e ?? '').charCodeAt(0));
      i += 2;
    }
    i++; // the closing quote
    args.push(Buffer.from(bytes).toString('utf8'));
  }
  return { time: head[1] ?? '', db: Number(head[2]), source: head[3] ?? '', args };
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '\\': '\\', '"': '"' };
