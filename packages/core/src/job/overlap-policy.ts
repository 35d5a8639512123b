import { JobDefinitionError } from '../errors.js';

/**
 * What happens when an occurrence of a schedule becomes due while the previous one is still running:
 * - `skip` (default): the occurrence is recorded as skipped and not run;
 * - `buffer-one`: it waits and runs once the previous finishes; at most one waits, later ones are skipped;
 * - `allow`: it runs concurrently.
 */
export type OverlapPolicy = 'skip' | 'allow' | 'buffer-one';
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['skip', 'allow', 'buffer-one'];
export const DEFAULT_OVERLAP_POLICY: OverlapPolicy = 'skip';

/** Called from schedule validation: a typo such as `overlap: 'skipp'` fails at start, not silently. */
export function validateOverlapPolicy(jobName: string, policy: unknown): void {
  if (policy === undefined || OVERLAP_POLICIES.includes(policy as OverlapPolicy)) return;
  throw new JobDefinitionError(
    jobName,
    `schedule.overlap ${JSON.stringify(policy)} is not a policy; use one of ${OVERLAP_POLICIES.map((p) => `"${p}"`).join(', ')}`,
  );
}
