import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { startOnFreePort } from './free-port.js';

const run = promisify(execFile);

export interface PostgresServerHandle {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`; the cluster trusts local connections. */
  url: string;
  stop(): Promise<void>;
}

/** The directory holding `initdb` and `pg_ctl`: PATH first, else Debian's newest /usr/lib/postgresql/<v>/bin. */
export function findPostgresBin(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) {
    throw new Error('PostgreSQL not found: no initdb on PATH nor under /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  }
  return join(root, newest, 'bin');
}

/**
 * PostgreSQL refuses to run as root, and CI runs as root: there the cluster belongs to the `postgres`
 * user (which Debian's package creates) and its commands run through `runuser`.
 */
async function asOwner(): Promise<{ wrap: (cmd: string, args: string[]) => [string, string[]]; chown: (path: string) => void }> {
  if (process.getuid?.() !== 0) return { wrap: (cmd, args) => [cmd, args], chown: () => undefined };
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
  return { wrap: (cmd, args) => ['runuser', ['-u', 'postgres', '--', cmd, ...args]], chown: (path) => chownSync(path, uid, gid) };
}

/**
 * A private PostgreSQL cluster per test file: `initdb` into a temp dir and `pg_ctl start` on a free port,
 * listening on 127.0.0.1 only with its unix socket in the temp dir, so tests never touch the machine's
 * shared server (5432) or each other. Durability is off (fsync, synchronous_commit): a test's data
 * outlives no crash of the machine, only crashes of the clients, which is what tests exercise.
 */
export async function startPostgresServer(): Promise<PostgresServerHandle> {
  const bin = findPostgresBin();
  let port = 0;
  const dir = mkdtempSync(join(tmpdir(), 'tickwork-pg-'));
  const data = join(dir, 'data');
  const owner = await asOwner();
  owner.chown(dir);
  // cwd: the cluster's owner may not be allowed into the caller's directory.
  const exec = (cmd: string, args: string[]) => {
    const [file, argv] = owner.wrap(join(bin, cmd), args);
    return run(file, argv, { cwd: dir, timeout: 60_000 });
  };
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
    const serverOpts = (p: number) => [
      `-p ${p}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
    ].join(' ');
    const logFile = join(dir, 'server.log');
    const logText = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
    // Its port was taken when the log written by this start says it could not bind.
    let portTaken = false;
    const start = async (p: number) => {
      const logBefore = logText().length;
      try {
        await exec('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', serverOpts(p), 'start']);
      } catch (err) {
        portTaken = /could not bind|address already in use/i.test(logText().slice(logBefore));
        throw err;
      }
    };
    port = (await startOnFreePort(start, () => portTaken)).port;
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const e = err as Error & { stderr?: string };
    throw new Error(`could not start a private PostgreSQL in ${dir}: ${e.message}\n${e.stderr ?? ''}`);
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
