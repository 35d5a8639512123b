import type { Logger } from '../logger.js';
import { useBullmqTelemetry } from './traces.js';

export interface TelemetryHandle {
  enabled: boolean;
  /** Sends the spans still buffered and stops the SDK (an app's close does it last). */
  shutdown(): Promise<void>;
}

const OFF: TelemetryHandle = { enabled: false, shutdown: async () => undefined };

/**
 * Traces are on when the standard OpenTelemetry variables name where to send them
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), unless `OTEL_SDK_DISABLED=true`
 * or `OTEL_TRACES_EXPORTER=none`. Every other `OTEL_*` variable (protocol, headers, sampler, resource
 * attributes, batch delays) is the SDK's own, read by it as documented upstream.
 */
export function tracesConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return false;
  return Boolean((env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim());
}

/**
 * Starts OpenTelemetry's Node SDK for this process when traces are configured (tracesConfigured), with no
 * automatic instrumentations (tickwork's and BullMQ's spans only), and gives BullMQ its bullmq-otel
 * telemetry. The SDK is loaded only then: with traces off nothing of it is imported.
 */
export async function startTelemetry(app: string, log: Logger): Promise<TelemetryHandle> {
  if (!tracesConfigured()) return OFF;
  const [{ NodeSDK }, { BullMQOtel }] = await Promise.all([import('@opentelemetry/sdk-node'), import('bullmq-otel')]);
  const sdk = new NodeSDK({ serviceName: process.env.OTEL_SERVICE_NAME?.trim() || `tickwork-${app}`, instrumentations: [] });
  sdk.start();
  useBullmqTelemetry(new BullMQOtel({ tracerName: 'bullmq' }));
  const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  log.info({ endpoint, protocol: process.env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf' }, 'OpenTelemetry traces on');
  return {
    enabled: true,
    async shutdown() {
      useBullmqTelemetry(undefined);
      await sdk.shutdown().catch((err: unknown) => log.warn({ err }, 'OpenTelemetry: could not send the last spans'));
    },
  };
}
