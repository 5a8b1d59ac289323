import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { admissionLimit, type AdmissionLimitOptions } from '../../http/admission-limit.js';
import { ApiError } from '../../http/api-error.js';
import { errorHandler } from '../../http/error-handler.js';
import { httpMetrics } from '../../http/http-metrics.js';
import { requestContext } from '../../http/request-context.js';
import { traceRequests, type CallerContext } from '../../http/trace-requests.js';
import { requestDeadline } from '../../http/request-deadline.js';
import { paymentsRouter, type PaymentsRouterDeps } from '../../payments/payments-router.js';
import type { TrustProxy } from '../../platform/config/config-fields.js';
import type { Logger } from '../../platform/telemetry/logger.js';
import type { OutageLog } from '../../platform/resilience/outage-log.js';
import type { ReadinessReport } from '../../platform/lifecycle/readiness.js';
import { refundsRouter, type RefundsRouterDeps } from '../../refunds/refunds-router.js';
import { eventsRouter, type EventsRouterDeps } from '../../webhooks/events-router.js';
import { webhooksRouter } from '../../webhooks/webhooks-router.js';
import type { WebhooksRouterDeps } from '../../webhooks/webhooks-router-deps.js';
import { buildOpenApiDocument } from './openapi.js';

/** docs/asyncapi.yaml at the repository root, found from this file (src/ or dist/). */
const ASYNCAPI_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../docs/asyncapi.yaml',
);

export interface AppDeps {
  logger: Logger;
  readiness: () => Promise<ReadinessReport>;
  payments: PaymentsRouterDeps;
  /** POST/GET /payments/{id}/refunds and GET /refunds/{id}; absent, those routes are 404. */
  refunds?: RefundsRouterDeps;
  /** /webhook_endpoints and its deliveries, retry and replay; absent, those routes are 404. */
  webhooks?: WebhooksRouterDeps;
  /** GET /events and /events/{id}; absent, those routes are 404. */
  events?: EventsRouterDeps;
  /** Retry-After of a 503 when Postgres is unavailable. */
  unavailableRetryAfterSeconds: number;
  /** REQUEST_DEADLINE_MS: past it a request is answered 503 (see requestDeadline). */
  requestDeadlineMs: number;
  /** Where the 503s of an unreachable Postgres are logged (once per interval). */
  postgresOutage?: OutageLog;
  /** TRACE_CALLER_CONTEXT: continue a caller's trace, or link it from a new one (default continue). */
  traceCallerContext?: CallerContext;
  /** HTTP_MAX_IN_FLIGHT: beyond it requests are answered 503 at once; absent, no limit. */
  admission?: AdmissionLimitOptions;
  /** TRUST_PROXY: whose X-Forwarded-For decides `req.ip`; absent, nobody's (the socket's peer). */
  trustProxy?: TrustProxy;
}

/** Builds the HTTP application without listening, so tests can serve it on port 0. */
export function buildApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // req.ip: the address failed authentications are counted against (merchants/merchant-gate.ts).
  app.set('trust proxy', deps.trustProxy ?? false);
  app.use(traceRequests(deps.traceCallerContext ?? 'continue'));
  app.use(httpMetrics());
  app.use(requestContext(deps.logger));
  if (deps.admission) app.use(admissionLimit(deps.admission));
  app.use(requestDeadline(deps.requestDeadlineMs, deps.unavailableRetryAfterSeconds));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Public readiness says ready or not and nothing more: dependency names, latencies and error
  // text are on the internal listener (METRICS_PORT), with /metrics.
  app.get('/readyz', async (_req, res) => {
    const { status } = await deps.readiness();
    res.status(status === 'ready' ? 200 : 503).json({ status });
  });

  const openApi = JSON.stringify(buildOpenApiDocument());
  const asyncApi = readFileSync(ASYNCAPI_PATH, 'utf8');
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });

  app.get('/asyncapi.yaml', (_req, res) => {
    res.type('application/yaml').send(asyncApi);
  });

  // Before the payments router: it authenticates its own paths, so each request once.
  if (deps.refunds) app.use(refundsRouter(deps.refunds));
  if (deps.webhooks) app.use(webhooksRouter(deps.webhooks));
  if (deps.events) app.use(eventsRouter(deps.events));
  app.use(paymentsRouter(deps.payments));

  app.use((req) => {
    throw new ApiError('not_found', `No route for ${req.method} ${req.path}.`);
  });
  app.use(errorHandler(deps.unavailableRetryAfterSeconds, deps.postgresOutage));
  return app;
}
