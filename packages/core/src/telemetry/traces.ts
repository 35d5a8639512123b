import { context, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';

/**
 * tickwork's spans, through the OpenTelemetry API. Off (no `OTEL_*` endpoint: start.ts), nothing here
 * runs: `traced` calls its function straight away, and queues and workers get no `telemetry` option, so
 * BullMQ makes no spans either. On, BullMQ's own spans (bullmq-otel: `add`/`addBulk` on the producer,
 * `process` on the worker, joined through the trace context BullMQ carries in each job) are the frame,
 * and tickwork's spans (the worker's stages, steps, the dead-letter move, a schedule's occurrences) are
 * their children.
 */
let bullmq: Telemetry | undefined;

/** Whether traces are on in this process. */
export function tracesOn(): boolean {
  return bullmq !== undefined;
}

/** BullMQ's `telemetry` option for a Queue or Worker: undefined while traces are off. */
export function bullmqTelemetry(): Telemetry | undefined {
  return bullmq;
}

/** Turns traces on (start.ts, once the SDK runs); `undefined` turns them off again. */
export function useBullmqTelemetry(telemetry: Telemetry | undefined): void {
  bullmq = telemetry;
}

const tracer = trace.getTracer('tickwork');

/**
 * Runs `fn` inside a span named `name` (a child of the active span), ended when `fn` settles; a throw is
 * recorded on the span and rethrown. With traces off it is `fn()` and nothing else.
 */
export function traced<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (bullmq === undefined) return fn();
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * As `traced`, in the trace of a job: under the context BullMQ carried in it (`opts.telemetry.metadata`,
 * written by the producer's add), for work that happens outside the job's own processing, such as its
 * move to the dead-letter queue after its last attempt. Without that context, a child of the active span.
 */
export function tracedInJob<T>(name: string, attributes: Attributes, metadata: string | undefined, fn: () => Promise<T>): Promise<T> {
  const telemetry = bullmq as Telemetry<Context> | undefined;
  if (telemetry === undefined) return fn();
  if (!metadata) return traced(name, attributes, fn);
  let parent: Context;
  try {
    parent = telemetry.contextManager.fromMetadata(context.active(), metadata);
  } catch {
    // Metadata another producer wrote, not a context BullMQ can read: the span starts a trace of its own.
    return traced(name, attributes, fn);
  }
  return context.with(parent, () => traced(name, attributes, fn));
}
