import type { NextFunction, Request, Response } from 'express';
import { Histogram } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import { routeOf } from './route-of.js';

/** The API's rate, errors and latency (dashboard and 5xx alert, ops/). */
export const httpRequestDuration = new Histogram({
  name: 'http_server_request_duration_seconds',
  help: 'HTTP requests served by the API, by method, matched route and status code',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metricsRegistry],
});

/** Observes every request when its response is sent; `unmatched` for paths no route served. */
export function httpMetrics() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    res.once('finish', () => {
      httpRequestDuration.observe(
        { method: req.method, route: routeOf(req) ?? 'unmatched', status: String(res.statusCode) },
        (performance.now() - started) / 1000,
      );
    });
    next();
  };
}
