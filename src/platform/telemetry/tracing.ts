import {
  context,
  createContextKey,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import type { OutageLog } from '../resilience/outage-log.js';

/**
 * The service's tracer. A proxy: until start-tracing registers a provider (tracing off, the
 * default) every span it starts is a non-recording no-op, which is what keeps tracing free when
 * no exporter is configured.
 */
export const tracer = trace.getTracer('payments-service');

const SAMPLED_OUT_SPAN = createContextKey('payments-service sampled-out span');

/**
 * The context to run a span's work in. A recording span becomes the active span. A span that
 * is not recording (its trace sampled out, or tracing off) does not: the pg and ioredis
 * instrumentations then find no parent and skip at once, instead of starting a non-recording
 * child for every query and command (most of what 10% sampling cost the API, DESIGN 80). Its
 * context stays under a key of ours, so children (inSpan) and what is written on
 * (currentTraceContext: the outbox row's traceparent, sampled flag off) still continue it, and
 * the next hop keeps the same sampling decision.
 */
export function contextWithSpan(parent: Context, span: Span): Context {
  if (span.isRecording()) return trace.setSpan(parent, span);
  return trace.deleteSpan(parent).setValue(SAMPLED_OUT_SPAN, span);
}

/** `ctx` with its sampled-out span (contextWithSpan) as the span again, to continue from. */
export function continuable(ctx: Context): Context {
  if (trace.getSpan(ctx)) return ctx;
  const sampledOut = ctx.getValue(SAMPLED_OUT_SPAN) as Span | undefined;
  return sampledOut ? trace.setSpan(ctx, sampledOut) : ctx;
}

/**
 * Runs `fn` in a new active span (a child of `parent`, or of the active context), ends it when
 * `fn` settles, and marks it as an error when `fn` rejects. The span is returned to `fn` for
 * attributes.
 */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  parent: Context | undefined,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const from = continuable(parent ?? context.active());
  const span = tracer.startSpan(name, options, from);
  return context.with(contextWithSpan(from, span), async () => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** trace_id and span_id of the active span, for log lines; empty when no span is recording. */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  // A sampled-out span has ids too; logging them would point at a trace that was never kept.
  if ((traceFlags & 1) === 0) return {};
  return { trace_id: traceId, span_id: spanId };
}

/** Where span exports' outcomes go once the process has a logger (logSpanExportOutages). */
let exportOutage: Pick<OutageLog, 'failed' | 'succeeded'> | undefined;

/**
 * Called by the composition root once its logger exists: from then on a collector that refuses
 * or cannot be reached is logged as an outage (a warning, a reminder per interval, a line when
 * exports succeed again) instead of the SDK's silent drop. Nothing is logged with tracing off.
 */
export function logSpanExportOutages(outage: Pick<OutageLog, 'failed' | 'succeeded'>): void {
  exportOutage = outage;
}

/** The OTLP exporter's report of one batch: undefined when the collector took it. */
export function reportSpanExport(error: Error | undefined): void {
  if (error) exportOutage?.failed(error);
  else exportOutage?.succeeded();
}

let stopProvider: (() => Promise<void>) | undefined;

/** Called by start-tracing: how to flush and stop the provider it registered. */
export function setTracingShutdown(stop: () => Promise<void>): void {
  stopProvider = stop;
}

/** How long the graceful shutdown waits for the last spans to reach the collector. */
const FLUSH_TIMEOUT_MS = 2_000;

/**
 * Flushes queued spans and stops tracing; a no-op when tracing is off. Waits at most
 * `timeoutMs`: a collector that accepts connections and never answers must not hold the
 * shutdown for the exporter's 10 s timeout. Resolves false when it gave up (the last spans are
 * lost), true otherwise. Never rejects.
 */
export async function shutdownTracing(timeoutMs = FLUSH_TIMEOUT_MS): Promise<boolean> {
  const stop = stopProvider;
  stopProvider = undefined;
  if (!stop) return true;
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, timeoutMs);
  });
  const flushed = stop().then(
    () => true,
    () => true,
  );
  const finished = await Promise.race([flushed, gaveUp]);
  clearTimeout(timer);
  return finished;
}
