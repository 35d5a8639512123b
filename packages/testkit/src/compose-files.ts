/**
 * docker-compose files as compose reads them, for the tests of their shape: parsed with YAML merge keys
 * (`<<: *anchor`), and an override file (`-f base -f override`) merged over the base by compose's rules for
 * the keys these files use.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './paths.js';

export interface Service {
  image?: string;
  build?: { context?: string; args?: Record<string, string> };
  command?: string[];
  container_name?: string;
  ports?: (string | { target?: number; published?: string | number })[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: string[]; interval?: string; retries?: number; start_period?: string };
  deploy?: { replicas?: number };
  stop_grace_period?: string;
  restart?: string;
  init?: boolean;
  volumes?: string[];
}

export interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

/** One file of the repository root, parsed. */
export function readComposeFile(name: string): ComposeFile {
  // merge: true resolves the `<<: *anchor` keys the files use, as docker-compose does.
  return parse(readFileSync(join(REPO_ROOT, name), 'utf8'), { merge: true }) as ComposeFile;
}

/** A depends_on in either form, as the long form (the short form means service_started). */
export function dependsOn(svc: Service): Record<string, { condition?: string }> {
  const deps = svc.depends_on ?? {};
  return Array.isArray(deps) ? Object.fromEntries(deps.map((d) => [d, { condition: 'service_started' }])) : deps;
}

/** The mount path of a `source:target[:mode]` volume entry. */
const target = (volume: string) => volume.split(':')[1] ?? volume;

/**
 * `-f files[0] -f files[1] ...` as compose merges them: mappings merge key by key, `volumes` merge by mount
 * path, `depends_on` by service, other lists (command, healthcheck test, ports) and scalars are replaced.
 */
export function mergedCompose(...files: string[]): ComposeFile {
  const [first, ...rest] = files.map(readComposeFile);
  if (!first) throw new Error('mergedCompose needs at least one file');
  const out: ComposeFile = structuredClone(first);
  for (const file of rest) {
    for (const [name, over] of Object.entries(file.services)) {
      const base = out.services[name] ?? {};
      const merged = mergeMaps(base as Record<string, unknown>, over as Record<string, unknown>) as Service;
      if (base.volumes || over.volumes) {
        const byTarget = new Map((base.volumes ?? []).map((v) => [target(v), v]));
        for (const v of over.volumes ?? []) byTarget.set(target(v), v);
        merged.volumes = [...byTarget.values()];
      }
      if (base.depends_on || over.depends_on) merged.depends_on = { ...dependsOn(base), ...dependsOn(over) };
      out.services[name] = merged;
    }
    out.volumes = { ...out.volumes, ...file.volumes };
  }
  return out;
}

function mergeMaps(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isMap(prev) && isMap(value) ? mergeMaps(prev, value) : value;
  }
  return out;
}

function isMap(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
