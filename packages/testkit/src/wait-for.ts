/**
 * Polls `probe` until it returns a truthy value or the deadline passes. Tests wait on conditions,
 * never on fixed sleeps; the interval only bounds how often Redis is asked.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string; /** Stops the polling (with an error) once aborted. */ signal?: AbortSignal } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  let lastError: unknown;
  for (;;) {
    if (opts.signal?.aborted) throw new Error(`stopped waiting for ${opts.what ?? 'condition'}`);
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const suffix = lastError ? ` (last error: ${(lastError as Error).message})` : '';
      throw new Error(`timed out after ${opts.timeoutMs ?? 15_000} ms waiting for ${opts.what ?? 'condition'}${suffix}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}
