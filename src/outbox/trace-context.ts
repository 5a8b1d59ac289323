import { context, propagation, ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { continuable } from '../platform/telemetry/tracing.js';

/**
 * A W3C trace context as the CloudEvents distributed-tracing extension carries it: stored with
 * an outbox row, copied into the Kafka record (`traceparent`/`tracestate` in the envelope and
 * `ce_traceparent`/`ce_tracestate` headers), read back by the consumer.
 */
export interface TraceContext {
  traceparent: string | null;
  tracestate: string | null;
}

export const NO_TRACE_CONTEXT: TraceContext = { traceparent: null, tracestate: null };

/**
 * The active span's context, or the sampled-out one's (what a row written now should carry);
 * nulls when tracing is off.
 */
export function currentTraceContext(active: Context = context.active()): TraceContext {
  const carrier: Record<string, string> = {};
  propagation.inject(continuable(active), carrier);
  return { traceparent: carrier.traceparent ?? null, tracestate: carrier.tracestate ?? null };
}

/** The context to continue (parent of the next span); the root context when there is none. */
export function contextOf(traceContext: TraceContext): Context {
  if (traceContext.traceparent === null) return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent: traceContext.traceparent };
  if (traceContext.tracestate !== null) carrier.tracestate = traceContext.tracestate;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * The trace context of a structured CloudEvent (its extension attributes), or nulls when the
 * value is not JSON or has none. Never throws.
 */
export function traceContextOfEnvelope(value: string): TraceContext {
  // Most values carry none when tracing is off: skip the parse.
  if (!value.includes('"traceparent"')) return NO_TRACE_CONTEXT;
  try {
    const event = JSON.parse(value) as { traceparent?: unknown; tracestate?: unknown };
    return {
      traceparent: typeof event.traceparent === 'string' ? event.traceparent : null,
      tracestate: typeof event.tracestate === 'string' ? event.tracestate : null,
    };
  } catch {
    return NO_TRACE_CONTEXT;
  }
}

/** `ce_traceparent`/`ce_tracestate` headers for a structured CloudEvent value (none if absent). */
export function traceContextHeaders(value: string): Record<string, string> {
  const { traceparent, tracestate } = traceContextOfEnvelope(value);
  const headers: Record<string, string> = {};
  if (traceparent !== null) headers.ce_traceparent = traceparent;
  if (traceparent !== null && tracestate !== null) headers.ce_tracestate = tracestate;
  return headers;
}
