import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type SpanOptions,
} from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import { continuable, contextWithSpan, tracer } from '../platform/telemetry/tracing.js';
import { routeOf } from './route-of.js';

/** Probes and scrapes: a span per call every few seconds would be noise. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * What a caller's `traceparent` is to this service: the parent of the request's span
 * (`continue`), or a link from a new trace that this service's sampler alone decides (`link`).
 */
export type CallerContext = 'continue' | 'link';

/**
 * A SERVER span per request, continuing the caller's W3C `traceparent`/`tracestate` headers
 * (or, with `callerContext` `link`, starting a new trace linked to them),
 * named after the matched route once the response is sent (`POST /v1/payments`). Everything the
 * request does (the Redis lock, the transaction, the outbox row's stored context) runs inside
 * it. Written here rather than with the http instrumentation: it needs no loader hook, so it
 * works the same under the test runner and in production (DESIGN, Observability). When tracing
 * is off the span is the API's no-op.
 */
export function traceRequests(callerContext: CallerContext = 'continue') {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (UNTRACED_PATHS.has(req.path)) {
      next();
      return;
    }
    const active = continuable(context.active());
    let parent = trace.getSpan(active) ? active : propagation.extract(ROOT_CONTEXT, req.headers);
    const options: SpanOptions = {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': req.method, 'url.path': req.path },
    };
    if (callerContext === 'link') {
      const caller = trace.getSpanContext(parent);
      if (caller?.isRemote) {
        // The caller's flags no longer decide: a new root, which the sampler decides alone.
        options.links = [{ context: caller }];
        parent = trace.deleteSpan(parent);
      }
    }
    const span = tracer.startSpan(req.method, options, parent);
    res.once('finish', () => {
      const routePath = routeOf(req);
      if (routePath) {
        span.updateName(`${req.method} ${routePath}`);
        span.setAttribute('http.route', routePath);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(contextWithSpan(parent, span), next);
  };
}
