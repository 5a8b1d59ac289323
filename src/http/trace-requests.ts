import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import { continuable, contextWithSpan, tracer } from '../platform/tracing.js';
import { routeOf } from './route-of.js';

/** Probes and scrapes: a span per call every few seconds would be noise. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * A SERVER span per request, continuing the caller's W3C `traceparent`/`tracestate` headers,
 * named after the matched route once the response is sent (`POST /v1/payments`). Everything the
 * request does (the Redis lock, the transaction, the outbox row's stored context) runs inside
 * it. Written here rather than with the http instrumentation: it needs no loader hook, so it
 * works the same under the test runner and in production (DESIGN, Observability). When tracing
 * is off the span is the API's no-op.
 */
export function traceRequests() {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (UNTRACED_PATHS.has(req.path)) {
      next();
      return;
    }
    const active = continuable(context.active());
    const parent = trace.getSpan(active) ? active : propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': req.path },
      },
      parent,
    );
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
