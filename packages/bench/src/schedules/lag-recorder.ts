/**
 * Where a bench worker keeps the fire lag of every run it starts: in its own memory, served once at the end
 * over a loopback HTTP port (BENCH_LAG_PORT). Writing each lag to Redis or a metric would add commands and
 * CPU to the very figures the bench divides by occurrences; an array push adds neither.
 *
 * Loaded by the stock tickwork worker (through the bench catalog) and by the bare BullMQ worker. The
 * scheduler loads the same catalog without BENCH_LAG_PORT, so it opens no port.
 */
import { createServer } from 'node:http';

/** Nominal times and lags, as parallel growable arrays (no object per run). */
let nominal = new Float64Array(1 << 16);
let lag = new Float64Array(1 << 16);
/** The run's schedule number (its data's `i`), or -1: lets bench:herd count each schedule's runs. */
let keys = new Float64Array(1 << 16);
let count = 0;
let serving = false;

/** Records one run that started `Date.now() - nominalMs` after its occurrence was due. */
export function recordLag(nominalMs: number, key = -1): void {
  if (!serving) serve();
  if (count === nominal.length) {
    const grow = (a: Float64Array) => {
      const b = new Float64Array(a.length * 2);
      b.set(a);
      return b;
    };
    nominal = grow(nominal);
    lag = grow(lag);
    keys = grow(keys);
  }
  keys[count] = key;
  nominal[count] = nominalMs;
  lag[count] = Date.now() - nominalMs;
  count++;
}

/** What GET /lags?from=&to= answers: the lags of runs whose occurrence was due in [from, to). */
export interface LagReply {
  lags: number[];
  /** Runs recorded in total, in or out of the window. */
  total: number;
  /** With `keys=1`: each listed run's schedule number, in the order of `lags`. */
  keys?: number[];
}

/** Opens the port named by BENCH_LAG_PORT, if any (only the bench's workers get one). */
export function serve(): void {
  serving = true;
  const port = Number(process.env.BENCH_LAG_PORT ?? 0);
  if (!port) return;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const from = Number(url.searchParams.get('from') ?? 0);
    const to = Number(url.searchParams.get('to') ?? Number.MAX_SAFE_INTEGER);
    const withKeys = url.searchParams.get('keys') === '1';
    const lags: number[] = [];
    const keyList: number[] = [];
    for (let i = 0; i < count; i++) {
      const n = nominal[i] as number;
      if (n >= from && n < to) {
        lags.push(lag[i] as number);
        if (withKeys) keyList.push(keys[i] as number);
      }
    }
    const reply: LagReply = { lags, total: count, ...(withKeys && { keys: keyList }) };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  });
  server.listen(port, '127.0.0.1');
  server.unref(); // never what keeps a worker from shutting down
}
