/**
 * Test helper: the sum of a Prometheus counter over the series matching `labels`, read from a worker
 * process's GET /metrics. Real-process tests use it to see what each worker counted.
 */
export async function readMetric(port: number, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (matches) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
