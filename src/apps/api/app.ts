import express, { type ErrorRequestHandler, type Express } from 'express';
import { problem, sendProblem } from '../../http/problem.js';
import { requestLogger } from '../../http/request-logger.js';
import type { Logger } from '../../platform/logger.js';
import { metricsRegistry } from '../../platform/metrics.js';
import type { ReadinessReport } from '../../platform/readiness.js';

export interface AppDeps {
  logger: Logger;
  readiness: () => Promise<ReadinessReport>;
}

/** Builds the HTTP application without listening, so tests can serve it on port 0. */
export function buildApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLogger(deps.logger));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', async (_req, res) => {
    const report = await deps.readiness();
    res.status(report.status === 'ready' ? 200 : 503).json(report);
  });

  app.get('/metrics', async (_req, res) => {
    res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
  });

  app.use((req, res) => {
    sendProblem(
      res,
      problem(404, 'not_found', 'Not Found', `No route for ${req.method} ${req.path}.`),
    );
  });

  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    req.log.error({ err: error }, 'unhandled error');
    if (res.headersSent) return;
    sendProblem(
      res,
      problem(500, 'internal_error', 'Internal Server Error', 'An unexpected error occurred.'),
    );
  };
  app.use(onError);
  return app;
}
