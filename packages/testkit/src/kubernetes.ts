import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './paths.js';

/**
 * Reads deploy/kubernetes for tests: no cluster runs here, so the tests check what a careless edit could
 * break without kubectl noticing (an env value the app rejects, a grace period shorter than the drain, a
 * queue KEDA does not watch).
 */

export const KUBERNETES_DIR = join(REPO_ROOT, 'deploy', 'kubernetes');

/** Stand-ins for the `tickwork-secrets` Secret the README tells operators to create. */
export const TEST_SECRETS: Record<string, Record<string, string>> = {
  'tickwork-secrets': { 'redis-password': 'f00dfeedf00dfeed', 'dashboard-password': 'correct horse battery' },
};

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  /** The file it came from, for messages. */
  file: string;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; configMapKeyRef?: { name: string; key: string } };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: Container[];
}

export function readManifests(): Manifest[] {
  const out: Manifest[] = [];
  for (const file of readdirSync(KUBERNETES_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) {
    for (const doc of parseAllDocuments(readFileSync(join(KUBERNETES_DIR, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const value = doc.toJS() as Omit<Manifest, 'file'> | null;
      if (value) out.push({ ...value, file });
    }
  }
  return out;
}

export function manifest(all: Manifest[], kind: string, name: string): Manifest {
  const found = all.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`deploy/kubernetes has no ${kind} "${name}"`);
  return found;
}

export function podSpecOf(m: Manifest): PodSpec {
  const spec = (m.spec?.template as { spec?: PodSpec } | undefined)?.spec;
  if (!spec) throw new Error(`${m.kind} ${m.metadata.name} (${m.file}) has no pod template`);
  return spec;
}

/**
 * The environment a container would get, as the kubelet builds it: ConfigMaps from `envFrom`, then `env`
 * in order, with `$(VAR)` expanded from variables defined before it. Secrets come from `secrets` (the test's
 * stand-ins for `tickwork-secrets`); a reference to a missing Secret key throws, as the pod would not start,
 * unless the reference is optional.
 */
export function containerEnv(all: Manifest[], container: Container, secrets: Record<string, Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, manifest(all, 'ConfigMap', from.configMapRef.name).data ?? {});
    if (from.secretRef) Object.assign(env, secretOf(secrets, from.secretRef.name));
  }
  for (const v of container.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) => env[name] ?? all);
    const secretRef = v.valueFrom?.secretKeyRef;
    if (secretRef) {
      const value = secretOf(secrets, secretRef.name)[secretRef.key];
      if (value === undefined && secretRef.optional) continue; // the kubelet leaves the variable unset
      if (value === undefined) throw new Error(`${container.name}: env ${v.name} reads key "${secretRef.key}" the Secret ${secretRef.name} lacks`);
      env[v.name] = value;
    }
    const configRef = v.valueFrom?.configMapKeyRef;
    if (configRef) {
      const value = manifest(all, 'ConfigMap', configRef.name).data?.[configRef.key];
      if (value === undefined) throw new Error(`${container.name}: env ${v.name} reads key "${configRef.key}" the ConfigMap ${configRef.name} lacks`);
      env[v.name] = value;
    }
  }
  return env;
}

function secretOf(secrets: Record<string, Record<string, string>>, name: string): Record<string, string> {
  const secret = secrets[name];
  if (!secret) throw new Error(`the manifests read the Secret "${name}", which the test does not provide`);
  return secret;
}
