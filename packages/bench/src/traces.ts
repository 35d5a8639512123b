/**
 * The traces mode of `pnpm bench`: the worker's real processor with OpenTelemetry traces on (the Node SDK
 * exporting OTLP/HTTP protobuf, the default, to a sink on this machine that reads and discards each
 * batch), so its cost beside the same processor with traces off is measured in the same rounds. The SDK
 * runs for the whole bench; traces are switched on only while the traces mode runs (modes run one at a
 * time), so every other mode runs as a process without traces does.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bullmqTelemetry, startTelemetry, useBullmqTelemetry } from '@tickwork/core';
import type { Telemetry } from 'bullmq';
import { pino } from 'pino';
import { median } from './measure.js';
import type { SeriesResult } from './series.js';

export interface BenchTraces {
  telemetry: Telemetry;
  on(): void;
  off(): void;
  /** Bytes of spans the sink received. */
  received(): number;
  close(): Promise<void>;
}

export async function startBenchTraces(): Promise<BenchTraces> {
  let bytes = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  process.env.OTEL_METRICS_EXPORTER = 'none';
  process.env.OTEL_LOGS_EXPORTER = 'none';
  const handle = await startTelemetry('bench', pino({ level: 'silent' }));
  const telemetry = bullmqTelemetry();
  if (!handle.enabled || !telemetry) throw new Error('bench traces: the OpenTelemetry SDK did not start');
  useBullmqTelemetry(undefined);
  return {
    telemetry,
    on: () => useBullmqTelemetry(telemetry),
    off: () => useBullmqTelemetry(undefined),
    received: () => bytes,
    async close() {
      await handle.shutdown();
      await new Promise((r) => sink.close(r));
    },
  };
}

/** The traces line: tickwork with traces on and off, each against bare BullMQ in the same rounds. */
export function tracesLine(c50: SeriesResult, traces: BenchTraces): string {
  const on = median(c50.ratios.traced ?? []);
  const off = median(c50.ratios.tickwork ?? []);
  return (
    `  traces: with OpenTelemetry traces on, tickwork runs no-op jobs at ${on.toFixed(2)}x bare BullMQ (traces off: ${off.toFixed(2)}x), ` +
    `${((1 - on / off) * 100).toFixed(0)}% less throughput; ${(traces.received() / 1e6).toFixed(1)} MB of spans sent (OTLP/HTTP protobuf). ` +
    `Off, no SDK is loaded and each span point is one boolean check.\n`
  );
}
