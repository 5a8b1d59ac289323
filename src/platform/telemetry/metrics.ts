import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * One Prometheus registry per process. Every role registers its metrics here and every process
 * exposes it at GET /metrics (the API on its own port; relay and settlement on METRICS_PORT).
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });
