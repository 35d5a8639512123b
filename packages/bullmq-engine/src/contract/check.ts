import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * One thing of BullMQ's (or ioredis's) that the engine's fast paths rely on beyond their public API, with
 * the check that it is still as the engine was written against. The whole list is CONTRACT (contract.ts);
 * docs/upgrading-bullmq.md gives each entry's reason and the test that guards it.
 */
export interface ContractEntry {
  /** What it is, as a maintainer would look it up: a file of BullMQ's, a member, a function. */
  readonly name: string;
  /** What tickwork does with it (one line). */
  readonly why: string;
  /** Undefined when the installed library matches; else what differs. */
  check(): string | undefined;
}

export interface ContractMismatch {
  name: string;
  detail: string;
}

/** Every entry that does not hold, each named. An entry whose check throws counts as not holding. */
export function checkContract(entries: readonly ContractEntry[]): ContractMismatch[] {
  const out: ContractMismatch[] = [];
  for (const e of entries) {
    let detail: string | undefined;
    try {
      detail = e.check();
    } catch (err) {
      detail = `could not be checked: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (detail !== undefined) out.push({ name: e.name, detail });
  }
  return out;
}

const require = createRequire(import.meta.url);

/** The first 12 hex digits of a text's SHA-1: enough to tell two versions of a file or function apart. */
export function digestOf(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 12);
}

/** The installed bullmq's `dist/cjs` folder (its Lua is under `commands/`). */
export function bullmqDist(): string {
  return dirname(require.resolve('bullmq'));
}

/** A package's installed version, read from its package.json beside its entry point. */
export function installedVersion(pkg: 'bullmq' | 'ioredis'): string {
  let dir = dirname(require.resolve(pkg));
  for (let i = 0; i < 5; i++) {
    try {
      const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (json.name === pkg && typeof json.version === 'string') return json.version;
    } catch {
      // not here: one folder up
    }
    dir = dirname(dir);
  }
  throw new Error(`no package.json of ${pkg} found above its entry point`);
}

/** An entry holding when a BullMQ Lua file (relative to its commands folder) has the digest it was written against. */
export function scriptEntry(file: string, digest: string, why: string): ContractEntry {
  return {
    name: `bullmq commands/${file}`,
    why,
    check() {
      const found = digestOf(readFileSync(join(bullmqDist(), 'commands', file), 'utf8'));
      return found === digest ? undefined : `its text changed (digest ${found}, the contract's ${digest})`;
    },
  };
}

/** An entry holding when a function's source (as the installed library ships it) has the digest it was written against. */
export function sourceEntry(name: string, digest: string, why: string, fn: () => unknown): ContractEntry {
  return {
    name,
    why,
    check() {
      const f = fn();
      if (typeof f !== 'function') return 'it is not a function any more';
      const found = digestOf(String(f));
      return found === digest ? undefined : `its source changed (digest ${found}, the contract's ${digest})`;
    },
  };
}

/** An entry holding when `holder` has a member `member` of type `type` (a method on a class's prototype, say). */
export function memberEntry(name: string, why: string, holder: () => unknown, member: string, type: 'function' | 'object' = 'function'): ContractEntry {
  return {
    name,
    why,
    check() {
      const h = holder() as Record<string, unknown> | undefined;
      if (!h) return 'its holder is gone';
      const found = typeof h[member];
      return found === type ? undefined : `it is ${found === 'undefined' ? 'gone' : `a ${found}`}, not a ${type}`;
    },
  };
}

/** An entry holding when a package's installed version is the one the contract was written against. */
export function versionEntry(pkg: 'bullmq' | 'ioredis', version: string, why: string): ContractEntry {
  return {
    name: `${pkg} version`,
    why,
    check() {
      const found = installedVersion(pkg);
      return found === version ? undefined : `installed ${found}, the contract's ${version}`;
    },
  };
}
